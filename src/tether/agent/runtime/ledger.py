"""The ownership ledger of a construction, and ``invoke_factory``: how one factory step runs.

The ledger lists what a construction made and must undo if it fails (an ``ExtensionHost`` to
dispose, a session file to remove, session parents to remove), in the order made. Rollback
cleans the still-owned records in reverse; each record is cleaned at most once; a successful
construction commits them all (the runtime owns them from then on).

``invoke_factory`` runs one step: a ledger mark and an identity check (plus a check of its
own, the session parent's confinement for the session step); then the override is called
with ``(input, fallback)`` (or the default factory directly). ``fallback(input)`` is memoized:
the first call starts the default factory on a task, every call returns that same task, and
a fallback that was started is always awaited here, so its failure is never lost (it fails
the step; with the override's own failure both are reported). If the step ends early (the
construction is cancelled while the fallback still runs), the fallback is cancelled and waited
for first, so whatever it registered is rolled back with the rest. A synchronous throw becomes
``"<Label> factory threw"``. The returned value is adopted by awaiting it, nested awaitables
too (at most ``RUNTIME_MAX_ADOPTION_DEPTH`` levels; each ``__await__`` is called once). The product
must pass the step's type guard (``TypeError("<Label> factory returned an invalid
product")``); it is registered as soon as it is adopted, before a started fallback is waited
for (so an override's own product is rolled back, its cleanup failures reported, when the
fallback fails), and every record made since the mark that is not the selected product is
cleaned (except one describing the same session file as a selected store). Then the identity
check runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar, cast

from tether._async.adoption import adopt_nested
from tether._async.race import neutralize, observe, reraise_task_cancellation
from tether._async.release import Release
from tether._base.strings import message_of
from tether.agent.runtime.errors import RuntimeAggregateError, TetherRuntimeError
from tether.agent.runtime.workspace_root import (
    Identity,
    WorkspaceState,
    identity_of,
    sync_directory,
)

__all__ = [
    "RUNTIME_MAX_ADOPTION_DEPTH",
    "Ledger",
    "LedgerRecord",
    "invoke_factory",
    "remove_created_file",
]

RUNTIME_MAX_ADOPTION_DEPTH: Final = 32
"""How many nested awaitables a factory's return value may be wrapped in."""

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - the input of a factory step

_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(slots=True, kw_only=True, eq=False)
class LedgerRecord:
    """One thing a construction made: a label, the value, the session file it describes
    (``resource_key``, a canonical path) and how to undo it."""

    label: str
    value: object
    resource_key: str | None = None
    cleanup: Callable[[], Awaitable[None]] | None = None
    state: Literal["owned", "committed", "cleaned"] = "owned"


@dataclass(slots=True, eq=False)
class Ledger:
    """The records of one construction, in the order made."""

    records: list[LedgerRecord] = field(default_factory=list[LedgerRecord])

    def add(
        self,
        label: str,
        value: object,
        *,
        cleanup: Callable[[], Awaitable[None]] | None = None,
        resource_key: str | None = None,
    ) -> LedgerRecord:
        """Record ``value``; returns the record."""
        record = LedgerRecord(label=label, value=value, resource_key=resource_key, cleanup=cleanup)
        self.records.append(record)
        return record

    def holds(self, value: object) -> bool:
        """Whether ``value`` is recorded (by identity)."""
        return any(record.value is value for record in self.records)

    async def clean(self, record: LedgerRecord) -> None:
        """Undo one still-owned record (at most once)."""
        if record.state != "owned":
            return
        record.state = "cleaned"
        if record.cleanup is not None:
            await record.cleanup()

    async def clean_since(
        self, mark: int, selected: object, selected_key: str | None
    ) -> list[Exception]:
        """Clean every record since ``mark`` except ``selected`` and records of the same
        session file as ``selected_key``; returns the failures."""
        release = _release()
        for record in reversed(self.records[mark:]):
            if record.value is selected:
                continue
            if selected_key is not None and record.resource_key == selected_key:
                continue
            await release.attempt(lambda record=record: self.clean(record))
        return release.failures

    async def rollback(self) -> list[Exception]:
        """Clean every still-owned record in reverse order; returns the failures."""
        release = _release()
        for record in reversed(self.records):
            await release.attempt(lambda record=record: self.clean(record))
        return release.failures

    def commit(self) -> None:
        """The construction succeeded: nothing is undone any more."""
        for record in self.records:
            if record.state == "owned":
                record.state = "committed"


def _release() -> Release:
    """A rollback's release: a cleanup that cancelled itself is a failure."""
    return Release(cancelled=lambda: RuntimeError("Runtime cleanup was cancelled"))


async def adopt(value: object, label: str) -> object:
    """Await ``value`` and what it resolves to, while awaitable (at most
    ``RUNTIME_MAX_ADOPTION_DEPTH`` levels; deeper is an invalid product, and the awaitable
    left over is disposed of without a "never awaited" warning)."""

    def too_deep(awaitable: object) -> TypeError:
        neutralize(awaitable)
        return TypeError(f"{label} factory returned an invalid product")

    return await adopt_nested(value, max_depth=RUNTIME_MAX_ADOPTION_DEPTH, too_deep=too_deep)


class _Fallback(Generic[I, T]):
    """The memoized fallback handed to an override."""

    __slots__ = ("_default", "_input", "_label", "task")

    def __init__(
        self, label: str, input_value: I, default: Callable[[I], Coroutine[Any, Any, T]]
    ) -> None:
        self._label = label
        self._input = input_value
        self._default = default
        self.task: asyncio.Task[T] | None = None

    def __call__(self, input_value: object = None) -> asyncio.Task[T]:
        task = self.task
        if task is not None:
            return task
        chosen = self._input if input_value is None else input_value
        expected = self._input
        if type(chosen) is not type(expected) or getattr(chosen, "workspace", None) != getattr(
            expected, "workspace", None
        ):
            raise TypeError(
                f"{self._label} fallback needs a {type(expected).__name__} for this workspace"
            )
        task = self.task = asyncio.ensure_future(self._default(cast(I, chosen)))
        observe(task)
        return task


async def invoke_factory(
    *,
    label: str,
    ledger: Ledger,
    workspace: WorkspaceState,
    input_value: I,
    override: Callable[[Any, Callable[..., Any]], object] | None,
    default: Callable[[I], Coroutine[Any, Any, T]],
    guard: Callable[[object], bool],
    register: Callable[[Any], LedgerRecord | None] | None = None,
    key_of: Callable[[Any], str | None] | None = None,
    before: Callable[[], None] | None = None,
) -> T:
    """Run one factory step (see the module docstring) and return its product."""
    mark = len(ledger.records)
    workspace.check()
    if before is not None:
        before()

    def keep(value: object) -> None:
        if guard(value) and register is not None and not ledger.holds(value):
            register(value)

    if override is None:
        selected: object = await default(input_value)
    else:
        fallback: _Fallback[I, T] = _Fallback(label, input_value, default)
        try:
            selected = await _overridden(label, input_value, override, fallback, keep)
        except BaseException:
            # Cancelled (or interrupted) with the fallback still going: stop it and let it
            # finish, so what it registered is in the ledger before the rollback runs.
            task = fallback.task
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait((task,))
            raise
    if not guard(selected):
        raise TypeError(f"{label} factory returned an invalid product")
    keep(selected)
    failures = await ledger.clean_since(
        mark, selected, None if key_of is None else key_of(selected)
    )
    if failures:
        raise RuntimeAggregateError(
            "RUNTIME_CONSTRUCTION_FAILED", f"{label} factory cleanup failed", failures
        )
    workspace.check()
    return cast(T, selected)


async def _overridden(
    label: str,
    input_value: object,
    override: Callable[[Any, Callable[..., Any]], object],
    fallback: _Fallback[Any, Any],
    keep: Callable[[object], None],
) -> object:
    """Call ``override`` with ``fallback``, adopt its product, ``keep`` it (registered in the
    ledger, so a failure from here on rolls it back), and wait for a started fallback (its
    failure fails the step)."""
    error: Exception | None = None
    selected: object = None
    try:
        returned = override(input_value, fallback)
    except Exception as thrown:
        error = RuntimeError(f"{label} factory threw")
        error.__cause__ = thrown
    else:
        try:
            selected = await adopt(returned, label)
            keep(selected)
        except asyncio.CancelledError as cancelled:
            reraise_task_cancellation(cancelled)
            error = RuntimeError(f"{label} factory was cancelled")
        except Exception as failed:
            error = failed
    task = fallback.task
    if task is not None:
        fallback_error = await _outcome(task, label)
        if fallback_error is not None and fallback_error is not error:
            error = (
                fallback_error
                if error is None
                else RuntimeAggregateError(
                    "RUNTIME_CONSTRUCTION_FAILED",
                    f"{label} factory and its fallback failed",
                    (error, fallback_error),
                )
            )
    if error is not None:
        raise error
    return selected


async def _outcome(task: asyncio.Task[Any], label: str) -> Exception | None:
    """Wait for a started fallback; its failure, if any."""
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        return RuntimeError(f"{label} fallback was cancelled")
    except Exception as error:
        return error
    return None


def remove_created_file(
    path: str, identity: Identity, content: bytes
) -> Callable[[], Awaitable[None]]:
    """The cleanup of a session file a construction created: remove it only while it is
    still that file with exactly ``content`` (then fsync its directory); otherwise leave it
    and raise ``RUNTIME_SESSION_ROLLBACK_FAILED``. A file already gone needs nothing."""

    async def cleanup() -> None:
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            return
        except OSError as error:
            raise _kept(path, error) from None
        try:
            info = os.fstat(fd)
            same = stat.S_ISREG(info.st_mode) and identity_of(info) == identity
            data = _read_up_to(fd, len(content) + 1) if same else b""
        finally:
            os.close(fd)
        if not same or data != content:
            raise _kept(path, None)
        with contextlib.suppress(FileNotFoundError):
            current = os.lstat(path)
            if identity_of(current) != identity:  # pragma: no cover - replaced since the read
                raise _kept(path, None)
            os.unlink(path)
        sync_directory(os.path.dirname(path))

    return cleanup


def _read_up_to(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, limit - size)
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def _kept(path: str, cause: BaseException | None) -> TetherRuntimeError:
    detail = "" if cause is None else f" ({message_of(cause, type(cause).__name__)})"
    return TetherRuntimeError(
        "RUNTIME_SESSION_ROLLBACK_FAILED",
        f"Runtime created session file {os.path.basename(path)} changed; it was kept{detail}",
    )
