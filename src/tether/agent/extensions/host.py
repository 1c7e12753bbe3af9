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
(``tether._types.instance_of``); its state is read through the class.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, cast, get_args

from tether._race import follow_signal, observe, signal_aborted, signal_reason
from tether._text import is_non_empty, message_of
from tether._types import instance_of, type_of
from tether.abort import AbortController, AbortError, AbortSignal
from tether.agent.extensions._instance import ACCESSOR, MISSING, read_function
from tether.agent.extensions._scope import in_scope, invoke
from tether.agent.extensions.errors import (
    ExtensionAggregateError,
    ExtensionError,
    ExtensionErrorCode,
)
from tether.agent.extensions.values import (
    AgentEventHook,
    ExtensionContext,
    ExtensionDefinition,
    ExtensionDisposer,
    ExtensionHookFailure,
    ExtensionMetadata,
    ExtensionStatus,
    check_definition,
    check_timeout,
    is_extension_id,
)
from tether.agent.resources import ResourceLoader
from tether.protocol import AgentEvent
from tether.protocol._fields import MAX_SAFE_INTEGER
from tether.tools.contract import ToolContractError, ToolRegistry

__all__ = ["ABANDONED_TASK_GRACE", "EXTENSION_TIMEOUT", "ExtensionHost"]

ABANDONED_TASK_GRACE: Final = 1.0
"""How long ``dispose()`` waits, in seconds, for cancelled callback tasks that are still running
(they ignored or are slow to honour the cancellation) before it reports them as failures."""
EXTENSION_TIMEOUT: Final = 30.0
"""The default bound, in seconds, of one activation and of one cleanup
(``ExtensionHost(timeout=...)``)."""

T = TypeVar("T")

_EVENT_TYPES: Final = frozenset(get_args(AgentEvent))
_DISPOSED_REASON: Final = "ExtensionHost disposed"
_CALLBACK_FAILED: Final = "Extension callback failed"
_REENTRANT: Final = "ExtensionHost operations cannot be called from inside an extension callback"
_CLOSED: Final = "Extension activation context is closed"
_STUBBORN: Final = "A cancelled extension callback was still running when disposal stopped waiting"
_STOPPED: Final = frozenset({"EXTENSION_CANCELLED", "EXTENSION_TIMED_OUT"})


def _nothing() -> None:
    return None


def _failure_message(error: BaseException) -> str:
    """The error's text, else its class name, else the generic text."""
    name = type(error).__name__
    return message_of(error, name if is_non_empty(name) else _CALLBACK_FAILED)


@dataclass(slots=True, kw_only=True)
class _Record:
    definition: ExtensionDefinition
    status: ExtensionStatus = "discovered"
    hooks: tuple[AgentEventHook, ...] = ()
    disposers: tuple[ExtensionDisposer, ...] = ()
    dispose: Callable[[], object] | None = None


@dataclass(slots=True, kw_only=True)
class _Stage:
    open: bool = True
    tools: list[object] = field(default_factory=list[object])
    hooks: list[AgentEventHook] = field(default_factory=list[AgentEventHook])
    disposers: list[ExtensionDisposer] = field(default_factory=list[ExtensionDisposer])
    timed_out: object = None  # the abort reason the activation's bound uses, once armed


def _error(code: ExtensionErrorCode, message: str) -> ExtensionError:
    return ExtensionError(code, message)


def _timed_out(name: str, what: str, seconds: float) -> ExtensionError:
    return _error(
        "EXTENSION_TIMED_OUT", f'Extension "{name}" {what} did not finish within {seconds:g} s'
    )


class ExtensionHost:
    """Discovers, activates and disposes extensions over one ``ResourceLoader`` and a base set
    of tools (see the module docstring for the rules).

    ``tools`` may be a ``ToolRegistry`` (its tools are snapshotted; later changes to it do not
    reach the host), an exact ``list``/``tuple`` of tool definitions, or ``None``. ``timeout``
    bounds each activation and each cleanup, in seconds (``None``: no bound; see the module
    docstring). Anything else, or a ``resources`` that is not a ``ResourceLoader``, raises
    ``ExtensionError`` ``EXTENSION_INVALID_OPTIONS``.
    """

    __slots__ = (
        "__weakref__",
        "_abandoned",
        "_activation",
        "_base",
        "_cut_short",
        "_disposal",
        "_live",
        "_order",
        "_records",
        "_resources",
        "_state",
        "_tail",
        "_tasks",
        "_timeout",
    )

    def __init__(
        self,
        *,
        resources: ResourceLoader,
        tools: ToolRegistry | Sequence[object] | None = None,
        timeout: float | None = EXTENSION_TIMEOUT,
    ) -> None:
        if type_of(resources) is not ResourceLoader:
            raise _error(
                "EXTENSION_INVALID_OPTIONS", "ExtensionHost resources must be a ResourceLoader"
            )
        self._resources: ResourceLoader = resources
        self._timeout = check_timeout(timeout)
        self._cut_short = False  # the disposal's task was cancelled: wait for nothing more
        self._base = self._base_tools(tools)
        self._live = ToolRegistry.snapshot(self._base)
        self._records: dict[str, _Record] = {}
        self._order: list[str] = []
        self._state: Literal["open", "disposing", "disposed"] = "open"
        self._activation: AbortController | None = None
        self._disposal: asyncio.Future[None] | None = None
        self._tail: asyncio.Future[Any] | None = None
        self._tasks: set[asyncio.Task[None]] = set()  # the loop keeps only weak references
        self._abandoned: set[asyncio.Future[Any]] = set()  # cancelled callbacks still running

    @staticmethod
    def _base_tools(tools: object) -> ToolRegistry:
        if tools is None:
            return ToolRegistry()
        kind = type_of(tools)
        if instance_of(tools, ToolRegistry) and kind.__getattribute__ is object.__getattribute__:
            return ToolRegistry.snapshot(tools)
        if kind is list or kind is tuple:
            registry = ToolRegistry()
            try:
                ToolRegistry.register_many(registry, tuple(tools))  # pyright: ignore[reportArgumentType]
            except ToolContractError as error:
                raise _error(
                    "EXTENSION_INVALID_OPTIONS", f"ExtensionHost tools are invalid: {error}"
                ) from error
            return registry
        raise _error(
            "EXTENSION_INVALID_OPTIONS",
            "ExtensionHost tools must be a ToolRegistry or a list of tool definitions",
        )

    # -- getters ---------------------------------------------------------------------------

    @property
    def resources(self) -> ResourceLoader:
        """The host's resource loader (the one each ``ExtensionContext`` receives)."""
        return self._resources

    @property
    def tools(self) -> ToolRegistry:
        """A detached snapshot of the live tools: base tools, then each active extension's."""
        return ToolRegistry.snapshot(self._live)

    @property
    def extensions(self) -> tuple[ExtensionMetadata, ...]:
        """Every discovered extension and its status, in discovery order."""
        return tuple(
            ExtensionMetadata(id=extension_id, status=record.status)
            for extension_id, record in self._records.items()
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
            raise _error("EXTENSION_REENTRANT_OPERATION", _REENTRANT)
        if self._state != "open":
            raise _error("EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed")
        kind = type_of(definitions)
        if kind is not list and kind is not tuple:
            raise _error(
                "INVALID_EXTENSION_DEFINITION", "Extension definitions must be a list or tuple"
            )
        batch: list[ExtensionDefinition] = []
        seen: set[str] = set()
        for index, entry in enumerate(tuple(definitions)):
            definition = self._definition(index, entry)
            extension_id = definition.id
            if extension_id in seen:
                raise _error(
                    "DUPLICATE_EXTENSION_ID", f'Extension id "{extension_id}" appears twice'
                )
            if extension_id in self._records:
                raise _error(
                    "DUPLICATE_EXTENSION_ID",
                    f'Extension id "{extension_id}" is already discovered',
                )
            seen.add(extension_id)
            batch.append(definition)
        for definition in batch:
            self._records[definition.id] = _Record(definition=definition)

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
            raise _error(
                "INVALID_EXTENSION_DEFINITION",
                f"Extension definition {index} must be an ExtensionDefinition or a dict "
                f"with id and create (got {kind.__name__})",
            )
        check_definition(extension_id, create)
        if kind is ExtensionDefinition:
            return entry  # pyright: ignore[reportReturnType]
        return ExtensionDefinition(id=extension_id, create=create)  # pyright: ignore[reportArgumentType]

    # -- the queue ----------------------------------------------------------------------------

    def _rejected(self, error: ExtensionError) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_exception(error)
        future.exception()  # pre-observed: never "exception was never retrieved"
        return future

    def _enqueue(self, body: Callable[[], Coroutine[Any, Any, T]]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        public: asyncio.Future[T] = loop.create_future()
        observe(public)
        task = loop.create_task(self._run(self._tail, body, public))
        self._tail = task
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return public

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled():
            task.exception()

    @staticmethod
    async def _run(
        previous: asyncio.Future[Any] | None,
        body: Callable[[], Coroutine[Any, Any, T]],
        public: asyncio.Future[T],
    ) -> None:
        try:
            if previous is not None and not previous.done():
                await asyncio.wait((previous,))
            value = await body()
        except BaseException as error:
            if not public.done():
                if isinstance(error, asyncio.CancelledError):
                    public.cancel()
                else:
                    public.set_exception(error)
            if isinstance(error, Exception):
                return
            raise  # never swallowed; the task's own record of it is observed (_enqueue)
        if not public.done():
            public.set_result(value)

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
            return self._rejected(_error("EXTENSION_REENTRANT_OPERATION", _REENTRANT))
        if signal is not None:
            try:
                if not instance_of(signal, AbortSignal):  # the rule of run_agent_loop
                    raise TypeError
                signal_aborted(signal)
            except Exception:
                return self._rejected(
                    _error("EXTENSION_INVALID_OPTIONS", "Activation signal must be an AbortSignal")
                )
        if self._state != "open":
            return self._rejected(_error("EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed"))
        return self._enqueue(lambda: self._activate(id, signal))

    async def _activate(self, extension_id: object, signal: AbortSignal | None) -> None:
        if self._state != "open":
            raise _error("EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed")
        record = self._records.get(extension_id) if is_extension_id(extension_id) else None  # pyright: ignore[reportArgumentType]
        if record is None:
            shown = f'"{extension_id}"' if type_of(extension_id) is str else repr(extension_id)
            raise _error("EXTENSION_NOT_FOUND", f"Extension {shown} was not discovered")
        name = record.definition.id
        if record.status == "active":
            raise _error("EXTENSION_ALREADY_ACTIVE", f'Extension "{name}" is already active')
        controller = AbortController()
        unfollow = follow_signal(signal, controller)
        assert unfollow is not None  # a signal that cannot be read was refused by activate()
        self._activation = controller
        record.status = "activating"
        stage = _Stage()
        disarm = self._arm(controller, stage, name)
        instance_dispose: list[Callable[[], object]] = []
        try:
            await self._transaction(record, controller, stage, instance_dispose)
        except Exception as error:
            disarm()
            await self._roll_back(record, controller, stage, instance_dispose, error)
        except BaseException:
            disarm()
            stage.open = False
            try:
                await self._clean_up(name, (*reversed(stage.disposers), *instance_dispose))
            finally:
                record.status = "failed"
            raise
        finally:
            disarm()
            self._activation = None
            unfollow()

    def _arm(self, controller: AbortController, stage: _Stage, name: str) -> Callable[[], None]:
        """Abort ``controller`` once the activation outlives the bound; returns the disarm."""
        seconds = self._timeout
        if seconds is None:
            return _nothing
        reason = stage.timed_out = _timed_out(name, "activation", seconds)
        handle = asyncio.get_running_loop().call_later(seconds, controller.abort, reason)
        return handle.cancel

    def _bound(self, name: str) -> tuple[AbortSignal | None, Callable[[], None]]:
        """The signal one cleanup of ``name`` races: aborted at the bound, or on the next loop
        turn when the disposal was cut short (the cleanup is called and runs its first step,
        but is not waited for); and its disarm."""
        seconds = self._timeout
        if seconds is None and not self._cut_short:
            return None, _nothing
        controller = AbortController()
        loop = asyncio.get_running_loop()
        if self._cut_short:
            cut = _error("EXTENSION_CANCELLED", f'Extension "{name}" disposal was cut short')
            return controller.signal, loop.call_soon(controller.abort, cut).cancel
        assert seconds is not None
        reason = _timed_out(name, "disposal", seconds)
        return controller.signal, loop.call_later(seconds, controller.abort, reason).cancel

    def _check_cancelled(self, name: str, controller: AbortController, stage: _Stage) -> None:
        if self._state != "open" or signal_aborted(controller.signal):
            raise self._cancelled(name, controller, stage)

    def _cancelled(self, name: str, controller: AbortController, stage: _Stage) -> ExtensionError:
        reason = signal_reason(controller.signal)
        if reason is not None and reason is stage.timed_out:
            return _error("EXTENSION_TIMED_OUT", str(reason))
        error = _error("EXTENSION_CANCELLED", f'Extension "{name}" activation was cancelled')
        if isinstance(reason, BaseException):
            error.__cause__ = reason
        return error

    async def _transaction(
        self,
        record: _Record,
        controller: AbortController,
        stage: _Stage,
        instance_dispose: list[Callable[[], object]],
    ) -> None:
        name = record.definition.id
        signal = controller.signal
        self._check_cancelled(name, controller, stage)
        instance = await invoke(
            self,
            record.definition.create,
            signal=signal,
            abandoned=self._abandoned,
            on_late=lambda late: self._dispose_late(name, late),
        )
        dispose = read_function(instance, "dispose")
        if dispose is not MISSING:
            if dispose is ACCESSOR or not callable(dispose):
                raise _error(
                    "INVALID_EXTENSION_DEFINITION",
                    f'Extension "{name}" dispose must be a function',
                )
            instance_dispose.append(dispose)
        activate = read_function(instance, "activate")
        if activate is MISSING or activate is ACCESSOR or not callable(activate):
            raise _error(
                "INVALID_EXTENSION_DEFINITION",
                f'Extension "{name}" instance must have an activate function',
            )
        self._check_cancelled(name, controller, stage)
        context = self._context(name, signal, stage)

        def selected() -> None:
            stage.open = False

        await invoke(
            self,
            activate,
            context,
            signal=signal,
            on_selected=selected,
            abandoned=self._abandoned,
        )
        stage.open = False
        self._check_cancelled(name, controller, stage)
        candidate = ToolRegistry.snapshot(self._live)
        ToolRegistry.register_many(candidate, tuple(stage.tools))
        self._live = candidate
        record.hooks = tuple(stage.hooks)
        record.disposers = tuple(stage.disposers)
        record.dispose = instance_dispose[0] if instance_dispose else None
        self._order.append(name)
        record.status = "active"

    def _context(self, name: str, signal: AbortSignal, stage: _Stage) -> ExtensionContext:
        def check_open() -> None:
            if not stage.open:
                raise _error("EXTENSION_ACTIVATION_FAILED", _CLOSED)

        def register_tool(definition: object) -> None:
            check_open()
            stage.tools.append(definition)

        def on_agent_event(hook: AgentEventHook) -> None:
            check_open()
            if not callable(hook):
                raise _error(
                    "INVALID_EXTENSION_DEFINITION",
                    f'Extension "{name}" agent event hook must be a function',
                )
            stage.hooks.append(hook)

        def on_dispose(disposer: ExtensionDisposer) -> None:
            check_open()
            if not callable(disposer):
                raise _error(
                    "INVALID_EXTENSION_DEFINITION",
                    f'Extension "{name}" disposer must be a function',
                )
            stage.disposers.append(disposer)

        return ExtensionContext(
            resources=self._resources,
            signal=signal,
            register_tool=register_tool,
            on_agent_event=on_agent_event,
            on_dispose=on_dispose,
        )

    async def _roll_back(
        self,
        record: _Record,
        controller: AbortController,
        stage: _Stage,
        instance_dispose: list[Callable[[], object]],
        error: Exception,
    ) -> None:
        stage.open = False
        name = record.definition.id
        if isinstance(error, ExtensionError) and error.code in _STOPPED:
            normalized = error
        elif self._state != "open" or signal_aborted(controller.signal):
            normalized = self._cancelled(name, controller, stage)
            if normalized.code == "EXTENSION_CANCELLED":
                normalized.__cause__ = error
        elif isinstance(error, ExtensionError):
            normalized = error
        else:
            normalized = _error(
                "EXTENSION_ACTIVATION_FAILED",
                f'Extension "{name}" activation failed: {_failure_message(error)}',
            )
            normalized.__cause__ = error
        failures, escaping = await self._clean_up(
            name, (*reversed(stage.disposers), *instance_dispose)
        )
        record.status = "failed"
        if escaping is not None:
            raise escaping
        if not failures:
            raise normalized
        primary = (
            error
            if normalized.code == "EXTENSION_ACTIVATION_FAILED"
            and not isinstance(error, ExtensionError)
            else normalized
        )
        aggregate = ExtensionAggregateError(
            "EXTENSION_ACTIVATION_ROLLBACK_FAILED",
            f'Extension "{name}" rollback failed',
            (primary, *failures),
        )
        raise _error(
            "EXTENSION_ACTIVATION_ROLLBACK_FAILED",
            f'Extension "{name}" activation failed and {len(failures)} cleanup(s) failed',
        ) from aggregate

    async def _clean_up(
        self, name: str, cleanups: Sequence[Callable[[], object]]
    ) -> tuple[list[Exception], BaseException | None]:
        """Run every cleanup of ``name`` in order, in a callback scope, each bounded: the
        failures, and the first bare ``BaseException`` (never swallowed: the caller raises it
        once everything ran). A cancellation of this task cuts the rest short."""
        failures: list[Exception] = []
        escaping: BaseException | None = None
        for cleanup in cleanups:
            signal, disarm = self._bound(name)
            try:
                await invoke(self, cleanup, signal=signal, abandoned=self._abandoned)
            except Exception as error:
                failures.append(error)
            except BaseException as error:
                if isinstance(error, asyncio.CancelledError):
                    self._cut_short = True
                if escaping is None:
                    escaping = error
            finally:
                disarm()
        return failures, escaping

    def _dispose_late(self, name: str, product: object) -> None:
        """A factory's product arrived after activation stopped waiting for it: dispose it
        (on a task the host keeps, bounded like a cleanup; its failure is dropped)."""

        async def dispose() -> None:
            signal, disarm = self._bound(name)
            try:
                instance = await invoke(self, lambda: product, signal=signal)
                method = read_function(instance, "dispose")
                if method is not MISSING and method is not ACCESSOR and callable(method):
                    await invoke(self, method, signal=signal, abandoned=self._abandoned)
            except Exception:
                pass  # nobody is left to report it to
            finally:
                disarm()

        task = asyncio.get_running_loop().create_task(dispose())
        self._abandoned.add(task)
        task.add_done_callback(self._abandoned.discard)

    # -- events -------------------------------------------------------------------------------

    def emit(self, event: AgentEvent) -> asyncio.Future[tuple[ExtensionHookFailure, ...]]:
        """Call every active hook with ``event``; resolves with the hooks' failures.

        ``event`` must be one of tether's agent events (``tether.protocol.AgentEvent``):
        they are frozen, so every hook sees the same immutable value. Anything else fails
        with ``INVALID_AGENT_EVENT``; also ``EXTENSION_REENTRANT_OPERATION`` and
        ``EXTENSION_HOST_DISPOSED``.
        """
        if in_scope(self):
            return self._rejected(_error("EXTENSION_REENTRANT_OPERATION", _REENTRANT))
        if self._state != "open":
            return self._rejected(_error("EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed"))
        kind = type_of(event)
        if kind not in _EVENT_TYPES:
            return self._rejected(
                _error(
                    "INVALID_AGENT_EVENT",
                    f"Agent event must be a tether AgentEvent (got {kind.__name__})",
                )
            )
        sequence: int = event.sequence
        if type_of(sequence) is not int or not 0 <= sequence <= MAX_SAFE_INTEGER:
            return self._rejected(
                _error(
                    "INVALID_AGENT_EVENT",
                    "Agent event sequence must be a non-negative safe integer",
                )
            )
        return self._enqueue(lambda: self._emit(event))

    async def _emit(self, event: AgentEvent) -> tuple[ExtensionHookFailure, ...]:
        failures: list[ExtensionHookFailure] = []
        hooks = [
            (extension_id, index, hook)
            for extension_id in self._order
            for index, hook in enumerate(self._records[extension_id].hooks)
        ]
        for extension_id, index, hook in hooks:
            try:
                await invoke(self, hook, event, abandoned=self._abandoned)
            except Exception as error:
                failures.append(
                    ExtensionHookFailure(
                        extension_id=extension_id,
                        hook_index=index,
                        message=_failure_message(error),
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
            return self._rejected(_error("EXTENSION_REENTRANT_OPERATION", _REENTRANT))
        if self._disposal is not None:
            return self._disposal
        disposal = self._enqueue(self._dispose)
        self._disposal = disposal
        self._state = "disposing"
        activation = self._activation
        if activation is not None:
            activation.abort(AbortError(_DISPOSED_REASON))
        return disposal

    async def _dispose(self) -> None:
        failures: list[Exception] = []
        escaping: BaseException | None = None
        for extension_id in reversed(self._order):
            record = self._records[extension_id]
            cleanups = [*reversed(record.disposers)]
            if record.dispose is not None:
                cleanups.append(record.dispose)
            failed, escaped = await self._clean_up(extension_id, cleanups)
            failures.extend(failed)
            escaping = escaping or escaped
            record.status = "disposed"
            record.hooks = record.disposers = ()
            record.dispose = None
        self._order.clear()
        self._live = ToolRegistry.snapshot(self._base)
        try:
            running = await self._wait_abandoned()
        except asyncio.CancelledError as error:
            self._cut_short = True
            running = 0
            escaping = escaping or error
        failures.extend(_error("EXTENSION_DISPOSAL_FAILED", _STUBBORN) for _ in range(running))
        self._state = "disposed"
        if escaping is not None:
            raise escaping
        if failures:
            aggregate = ExtensionAggregateError(
                "EXTENSION_DISPOSAL_FAILED", "ExtensionHost disposal failed", failures
            )
            raise _error(
                "EXTENSION_DISPOSAL_FAILED",
                f"ExtensionHost disposal failed: {len(failures)} cleanup(s) failed",
            ) from aggregate

    async def _wait_abandoned(self) -> int:
        """Wait at most ``ABANDONED_TASK_GRACE`` seconds for the abandoned callbacks (and the
        late disposals they start); how many still run then (none waited for once the
        disposal was cut short)."""
        if self._cut_short:
            return 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ABANDONED_TASK_GRACE
        while self._abandoned:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            await asyncio.wait(
                tuple(self._abandoned), timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
        return len(self._abandoned)

    def __repr__(self) -> str:
        return f"<ExtensionHost {self._state} {[m.id for m in self.extensions]}>"
