"""``ExtensionHost``: transactional activation, serialized work, reverse-order disposal.

* ``discover(definitions)`` records a batch of ``ExtensionDefinition`` values (or exact
  ``dict``s with ``id`` and ``create``) all or nothing, without calling a factory.
* ``activate``, ``emit`` and ``dispose`` run one at a time, in call order, on one queue; a
  failed operation does not block later ones. Each returns an ``asyncio.Future`` (not a
  coroutine): a failure raised before the work is queued (reentrancy, a bad signal, a
  disposed host) is already failed, and every returned future has its exception marked as
  retrieved, so a caller that never awaits one never gets "exception was never retrieved".
  Cancelling a returned future stops only that waiter: the work goes on (pass a ``signal``
  to cancel an activation).
* **Activation is a transaction.** ``create()`` and ``activate(context)`` stage tools, hooks
  and disposers; they become visible only when everything succeeded and the tools were
  registered as one batch on a snapshot of the live registry (a duplicate name fails it
  all). On any failure the staged disposers run in reverse order, then the instance's
  ``dispose``; nothing staged remains and the status is ``failed`` (it may be activated
  again). Cancellation (the caller's signal, or ``dispose()`` while activating) gives
  ``EXTENSION_CANCELLED`` and the same rollback: the host stops waiting at once, cancels the
  callback's task and gives it one loop turn to unwind, then rolls back (so a callback that
  ignores cancellation cannot hold the host up). A callback task still running then is kept
  by the host; ``dispose()`` waits for such tasks at most ``ABANDONED_TASK_GRACE`` seconds
  and reports each one still running as a disposal failure. A factory's product that still
  arrives after that (its coroutine ignored the cancellation, or it returned a ``Future``
  that a thread resolves: such a future is never cancelled) is disposed then: its
  ``dispose`` is called, bounded by ``timeout``, and its failure, with nobody left to report
  it to, is dropped. A bare ``BaseException`` from extension code (or the cancellation of the
  host's own queue task) is never swallowed: the rollback still runs in full, then it
  propagates.
* **Bounds** (tether's): ``timeout`` seconds (``EXTENSION_TIMEOUT`` by default; ``None`` for
  none) bound each activation (``create()`` and ``activate(context)`` together) and each
  cleanup (a disposer, an instance's ``dispose``), in a rollback and in ``dispose()``. One
  that does not finish in time is abandoned as a cancellation is, and fails
  ``EXTENSION_TIMED_OUT``, naming the extension: the activation fails with it (after its
  rollback), a cleanup's is collected with the other failures. If the task that runs a
  disposal is itself cancelled (``asyncio.run`` cancels what is left when a program ends),
  every remaining cleanup is still called but not waited for, and abandoned callbacks are
  not waited for either, so the disposal ends within a few loop turns.
* ``emit(event)`` calls the hooks in activation order, then registration order, each awaited
  before the next; failures are reported per hook and later hooks still run. tether's agent
  events are frozen dataclasses, so they are passed as they are (no copy is needed).
* ``dispose()`` (idempotent: the same future on every call) aborts an activation in flight,
  then disposes every active extension in reverse activation order, attempting every
  cleanup, waits (bounded) for abandoned callback tasks, and restores the base tools.
* **Reentrancy.** While a callback of this host runs (and detached work started inside it,
  until the callback has finally settled), ``discover`` raises and ``activate``, ``emit`` and
  ``dispose`` return failed futures, all with ``EXTENSION_REENTRANT_OPERATION``.

Caller objects are read defensively: by their real class (``type()``, never a faked
``__class__``), exact ``list``/``tuple``/``dict`` types only, the
``ResourceLoader``/``ToolRegistry`` classes' own methods (a subclass's overrides are never
called), and instance functions through ``inspect.getattr_static`` (no ``__getattr__``,
property or other descriptor code runs; an accessor counts as "not a function"). A signal is
an ``AbortSignal`` or a subclass of one, the rule ``run_agent_loop`` applies
(``tether._base.exact_types.instance_of``); its state is read through the class.

The host's modules, one job each: ``_records`` (what the host keeps, its errors), ``_queue``
(the one queue of operations), ``_cleanup`` (bounded cleanups, abandoned callbacks, late
products), ``_activation`` (the transaction and its rollback) and this one (the public
``ExtensionHost``: discovery, events, disposal).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Final, cast, get_args

from tether._async.race import signal_aborted
from tether._async.release import Release
from tether._base.exact_types import exactly, instance_of, is_array, type_of
from tether.abort import AbortError, AbortSignal
from tether.agent.extensions._activation import Activation
from tether.agent.extensions._cleanup import ABANDONED_TASK_GRACE, Cleanup
from tether.agent.extensions._instance import MISSING
from tether.agent.extensions._queue import WorkQueue, rejected
from tether.agent.extensions._records import (
    REENTRANT,
    HostState,
    Record,
    extension_error,
    failure_message,
)
from tether.agent.extensions._scope import in_scope, invoke
from tether.agent.extensions.errors import ExtensionAggregateError
from tether.agent.extensions.values import (
    ExtensionDefinition,
    ExtensionHookFailure,
    ExtensionMetadata,
    check_definition,
    check_timeout,
    untyped_definition,
)
from tether.agent.resources import ResourceLoader
from tether.protocol import AgentEvent
from tether.protocol._fields import MAX_SAFE_INTEGER
from tether.tools.contract import ToolContractError
from tether.tools.tool_registry import ToolRegistry

__all__ = ["ABANDONED_TASK_GRACE", "EXTENSION_TIMEOUT", "ExtensionHost"]

EXTENSION_TIMEOUT: Final = 30.0
"""The default bound, in seconds, of one activation and of one cleanup
(``ExtensionHost(timeout=...)``)."""

_EVENT_TYPES: Final = frozenset(get_args(AgentEvent))
_DISPOSED_REASON: Final = "ExtensionHost disposed"
_STUBBORN: Final = "A cancelled extension callback was still running when disposal stopped waiting"


class ExtensionHost:
    """Discovers, activates and disposes extensions over one ``ResourceLoader`` and a base set
    of tools (see the module docstring for the rules).

    ``tools`` may be a ``ToolRegistry`` (its tools are snapshotted; later changes to it do not
    reach the host), an exact ``list``/``tuple`` of tool definitions, or ``None``. ``timeout``
    bounds each activation and each cleanup, in seconds (``None``: no bound; see the module
    docstring). Anything else, or a ``resources`` that is not a ``ResourceLoader``, raises
    ``ExtensionError`` ``EXTENSION_INVALID_OPTIONS``.
    """

    __slots__ = ("__weakref__", "_activation", "_cleanup", "_disposal", "_queue", "_state")

    def __init__(
        self,
        *,
        resources: ResourceLoader,
        tools: ToolRegistry | Sequence[object] | None = None,
        timeout: float | None = EXTENSION_TIMEOUT,
    ) -> None:
        if type_of(resources) is not ResourceLoader:
            raise extension_error(
                "EXTENSION_INVALID_OPTIONS", "ExtensionHost resources must be a ResourceLoader"
            )
        checked = check_timeout(timeout)
        base = self._base_tools(tools)
        self._state = HostState(resources=resources, base=base, live=ToolRegistry.snapshot(base))
        self._cleanup = Cleanup(self, checked)
        self._activation = Activation(self, self._state, self._cleanup)
        self._queue = WorkQueue()
        self._disposal: asyncio.Future[None] | None = None

    @staticmethod
    def _base_tools(tools: object) -> ToolRegistry:
        if tools is None:
            return ToolRegistry()
        kind = type_of(tools)
        if instance_of(tools, ToolRegistry) and kind.__getattribute__ is object.__getattribute__:
            return ToolRegistry.snapshot(tools)
        if is_array(tools):
            registry = ToolRegistry()
            try:
                ToolRegistry.register_many(registry, tuple(tools))
            except ToolContractError as error:
                raise extension_error(
                    "EXTENSION_INVALID_OPTIONS", f"ExtensionHost tools are invalid: {error}"
                ) from error
            return registry
        raise extension_error(
            "EXTENSION_INVALID_OPTIONS",
            "ExtensionHost tools must be a ToolRegistry or a list of tool definitions",
        )

    # -- getters ---------------------------------------------------------------------------

    @property
    def resources(self) -> ResourceLoader:
        """The host's resource loader (the one each ``ExtensionContext`` receives)."""
        return self._state.resources

    @property
    def tools(self) -> ToolRegistry:
        """A detached snapshot of the live tools: base tools, then each active extension's."""
        return ToolRegistry.snapshot(self._state.live)

    @property
    def extensions(self) -> tuple[ExtensionMetadata, ...]:
        """Every discovered extension and its status, in discovery order."""
        return tuple(
            ExtensionMetadata(id=extension_id, status=record.status)
            for extension_id, record in self._state.records.items()
        )

    # -- discovery ---------------------------------------------------------------------------

    def discover(self, definitions: Sequence[ExtensionDefinition | dict[str, object]]) -> None:
        """Record a batch of definitions (status ``discovered``), all or nothing.

        Raises ``ExtensionError``: ``EXTENSION_REENTRANT_OPERATION`` from inside a callback,
        ``EXTENSION_HOST_DISPOSED`` once ``dispose()`` was called,
        ``INVALID_EXTENSION_DEFINITION`` for a batch that is not an exact ``list``/``tuple``
        or an entry that is neither an ``ExtensionDefinition`` nor an exact ``dict`` with a
        valid ``id`` and a callable ``create``, ``DUPLICATE_EXTENSION_ID`` for an id given
        twice or already discovered.
        """
        if in_scope(self):
            raise extension_error("EXTENSION_REENTRANT_OPERATION", REENTRANT)
        if self._state.status != "open":
            raise extension_error("EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed")
        kind = type_of(definitions)
        if kind is not list and kind is not tuple:
            raise extension_error(
                "INVALID_EXTENSION_DEFINITION", "Extension definitions must be a list or tuple"
            )
        batch: list[ExtensionDefinition] = []
        seen: set[str] = set()
        for index, entry in enumerate(tuple(definitions)):
            definition = self._definition(index, entry)
            extension_id = definition.id
            if extension_id in seen:
                raise extension_error(
                    "DUPLICATE_EXTENSION_ID", f'Extension id "{extension_id}" appears twice'
                )
            if extension_id in self._state.records:
                raise extension_error(
                    "DUPLICATE_EXTENSION_ID",
                    f'Extension id "{extension_id}" is already discovered',
                )
            seen.add(extension_id)
            batch.append(definition)
        for definition in batch:
            self._state.records[definition.id] = Record(definition=definition)

    @staticmethod
    def _definition(index: int, entry: object) -> ExtensionDefinition:
        kind = type_of(entry)
        if kind is ExtensionDefinition:
            given = cast(ExtensionDefinition, entry)
            extension_id: object = given.id
            create: object = given.create
        elif kind is dict:
            fields = cast("dict[str, object]", entry)
            extension_id = fields.get("id", MISSING)
            create = fields.get("create", MISSING)
        else:
            raise extension_error(
                "INVALID_EXTENSION_DEFINITION",
                f"Extension definition {index} must be an ExtensionDefinition or a dict "
                f"with id and create (got {kind.__name__})",
            )
        check_definition(extension_id, create)
        if exactly(entry, ExtensionDefinition):
            return entry
        return untyped_definition(extension_id, create)

    # -- activation ---------------------------------------------------------------------------

    def activate(self, id: str, signal: AbortSignal | None = None) -> asyncio.Future[None]:
        """Activate a discovered (or ``failed``) extension as one transaction.

        The future fails with ``ExtensionError``: ``EXTENSION_REENTRANT_OPERATION``,
        ``EXTENSION_INVALID_OPTIONS`` (a ``signal`` that is not an ``AbortSignal``),
        ``EXTENSION_HOST_DISPOSED``, ``EXTENSION_NOT_FOUND``, ``EXTENSION_ALREADY_ACTIVE``,
        ``INVALID_EXTENSION_DEFINITION`` (an instance without an ``activate`` function, a bad
        ``dispose``, hook or disposer), ``EXTENSION_CANCELLED``,
        ``EXTENSION_ACTIVATION_FAILED`` (anything else the extension raised, or a tool that
        cannot be registered; the original error is the ``__cause__``), or
        ``EXTENSION_ACTIVATION_ROLLBACK_FAILED`` when a cleanup failed too: its ``__cause__``
        is an ``ExtensionAggregateError`` of the primary failure, then the cleanup failures.
        """
        if in_scope(self):
            return rejected(extension_error("EXTENSION_REENTRANT_OPERATION", REENTRANT))
        if signal is not None:
            try:
                if not instance_of(signal, AbortSignal):  # the rule of run_agent_loop
                    raise TypeError
                signal_aborted(signal)
            except Exception:
                return rejected(
                    extension_error(
                        "EXTENSION_INVALID_OPTIONS", "Activation signal must be an AbortSignal"
                    )
                )
        if self._state.status != "open":
            return rejected(extension_error("EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed"))
        return self._queue.enqueue(lambda: self._activation.activate(id, signal))

    # -- events -------------------------------------------------------------------------------

    def emit(self, event: AgentEvent) -> asyncio.Future[tuple[ExtensionHookFailure, ...]]:
        """Call every active hook with ``event``; resolves with the hooks' failures.

        ``event`` must be one of tether's agent events (``tether.protocol.AgentEvent``):
        they are frozen, so every hook sees the same immutable value. Anything else fails
        with ``INVALID_AGENT_EVENT``; also ``EXTENSION_REENTRANT_OPERATION`` and
        ``EXTENSION_HOST_DISPOSED``.
        """
        if in_scope(self):
            return rejected(extension_error("EXTENSION_REENTRANT_OPERATION", REENTRANT))
        if self._state.status != "open":
            return rejected(extension_error("EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed"))
        kind = type_of(event)
        if kind not in _EVENT_TYPES:
            return rejected(
                extension_error(
                    "INVALID_AGENT_EVENT",
                    f"Agent event must be a tether AgentEvent (got {kind.__name__})",
                )
            )
        sequence: int = event.sequence
        if type_of(sequence) is not int or not 0 <= sequence <= MAX_SAFE_INTEGER:
            return rejected(
                extension_error(
                    "INVALID_AGENT_EVENT",
                    "Agent event sequence must be a non-negative safe integer",
                )
            )
        return self._queue.enqueue(lambda: self._emit(event))

    async def _emit(self, event: AgentEvent) -> tuple[ExtensionHookFailure, ...]:
        failures: list[ExtensionHookFailure] = []
        hooks = [
            (extension_id, index, hook)
            for extension_id in self._state.order
            for index, hook in enumerate(self._state.records[extension_id].hooks)
        ]
        for extension_id, index, hook in hooks:
            try:
                await invoke(self, hook, event, abandoned=self._cleanup.abandoned)
            except Exception as error:
                failures.append(
                    ExtensionHookFailure(
                        extension_id=extension_id,
                        hook_index=index,
                        message=failure_message(error),
                    )
                )
        return tuple(failures)

    # -- disposal -----------------------------------------------------------------------------

    def dispose(self) -> asyncio.Future[None]:
        """Dispose the host: the same future on every call.

        Aborts an activation in flight (it fails ``EXTENSION_CANCELLED``), then, after the
        work already queued, runs each active extension's disposers (reverse registration
        order) and its instance ``dispose``, extensions in reverse activation order, every
        one attempted; then waits at most ``ABANDONED_TASK_GRACE`` seconds for cancelled
        callback tasks still running (each one still running after that is a failure). Fails
        with ``EXTENSION_DISPOSAL_FAILED`` (``__cause__``: an ``ExtensionAggregateError`` of
        every failure in attempt order). From inside a callback it fails
        ``EXTENSION_REENTRANT_OPERATION`` and changes nothing.
        """
        if in_scope(self):
            return rejected(extension_error("EXTENSION_REENTRANT_OPERATION", REENTRANT))
        if self._disposal is not None:
            return self._disposal
        disposal = self._queue.enqueue(self._dispose)
        self._disposal = disposal
        self._state.status = "disposing"
        activation = self._state.activation
        if activation is not None:
            activation.abort(AbortError(_DISPOSED_REASON))
        return disposal

    async def _dispose(self) -> None:
        release = Release(hold=True)
        for extension_id in reversed(self._state.order):
            record = self._state.records[extension_id]
            cleanups = [*reversed(record.disposers)]
            if record.dispose is not None:
                cleanups.append(record.dispose)
            await self._cleanup.clean_up(extension_id, cleanups, release)
            record.status = "disposed"
            record.hooks = record.disposers = ()
            record.dispose = None
        self._state.order.clear()
        self._state.live = ToolRegistry.snapshot(self._state.base)
        try:
            running = await self._cleanup.wait_abandoned()
        except asyncio.CancelledError as error:
            self._cleanup.cut_short = True
            running = 0
            release.hold(error)
        failures = release.failures
        failures.extend(
            extension_error("EXTENSION_DISPOSAL_FAILED", _STUBBORN) for _ in range(running)
        )
        self._state.status = "disposed"
        if release.escaping is not None:
            raise release.escaping
        if failures:
            aggregate = ExtensionAggregateError(
                "EXTENSION_DISPOSAL_FAILED", "ExtensionHost disposal failed", failures
            )
            raise extension_error(
                "EXTENSION_DISPOSAL_FAILED",
                f"ExtensionHost disposal failed: {len(failures)} cleanup(s) failed",
            ) from aggregate

    def __repr__(self) -> str:
        return f"<ExtensionHost {self._state.status} {[m.id for m in self.extensions]}>"
