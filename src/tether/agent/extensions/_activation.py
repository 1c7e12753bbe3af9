"""An ``ExtensionHost``'s activation transaction: ``create()`` and ``activate(context)`` stage
tools, hooks and disposers that become visible only when everything succeeded; any failure,
cancellation or timeout rolls back what was staged, in reverse order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from tether._async.race import follow_signal, signal_aborted, signal_reason
from tether._base.exact_types import type_of
from tether.abort import AbortController, AbortSignal
from tether.agent.extensions._cleanup import Cleanup
from tether.agent.extensions._instance import ACCESSOR, MISSING, read_function
from tether.agent.extensions._records import (
    HostState,
    Record,
    Stage,
    extension_error,
    failure_message,
    nothing,
    timed_out,
)
from tether.agent.extensions._scope import invoke
from tether.agent.extensions.errors import ExtensionAggregateError, ExtensionError
from tether.agent.extensions.values import (
    AgentEventHook,
    ExtensionContext,
    ExtensionDisposer,
    is_extension_id,
)
from tether.tools.tool_registry import ToolRegistry

__all__ = ["Activation"]

_CLOSED: Final = "Extension activation context is closed"
_STOPPED: Final = frozenset({"EXTENSION_CANCELLED", "EXTENSION_TIMED_OUT"})


class Activation:
    """Runs activations over the host's state. ``owner`` is the host (callbacks run in its
    scope)."""

    __slots__ = ("cleanup", "owner", "state")

    def __init__(self, owner: object, state: HostState, cleanup: Cleanup) -> None:
        self.owner = owner
        self.state = state
        self.cleanup = cleanup

    async def activate(self, extension_id: object, signal: AbortSignal | None) -> None:
        """Activate a discovered (or ``failed``) extension as one transaction (see
        ``ExtensionHost.activate``)."""
        state = self.state
        if state.status != "open":
            raise extension_error("EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed")
        record = state.records.get(extension_id) if is_extension_id(extension_id) else None
        if record is None:
            shown = f'"{extension_id}"' if type_of(extension_id) is str else repr(extension_id)
            raise extension_error("EXTENSION_NOT_FOUND", f"Extension {shown} was not discovered")
        name = record.definition.id
        if record.status == "active":
            raise extension_error(
                "EXTENSION_ALREADY_ACTIVE", f'Extension "{name}" is already active'
            )
        controller = AbortController()
        unfollow = follow_signal(signal, controller)
        assert unfollow is not None  # a signal that cannot be read was refused by activate()
        state.activation = controller
        record.status = "activating"
        stage = Stage()
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
                await self.cleanup.clean_up(name, (*reversed(stage.disposers), *instance_dispose))
            finally:
                record.status = "failed"
            raise
        finally:
            disarm()
            state.activation = None
            unfollow()

    def _arm(self, controller: AbortController, stage: Stage, name: str) -> Callable[[], None]:
        """Abort ``controller`` once the activation outlives the bound; returns the disarm."""
        seconds = self.cleanup.timeout
        if seconds is None:
            return nothing
        reason = stage.timed_out = timed_out(name, "activation", seconds)
        handle = asyncio.get_running_loop().call_later(seconds, controller.abort, reason)
        return handle.cancel

    def _check_cancelled(self, name: str, controller: AbortController, stage: Stage) -> None:
        if self.state.status != "open" or signal_aborted(controller.signal):
            raise self._cancelled(name, controller, stage)

    def _cancelled(self, name: str, controller: AbortController, stage: Stage) -> ExtensionError:
        reason = signal_reason(controller.signal)
        if reason is not None and reason is stage.timed_out:
            return extension_error("EXTENSION_TIMED_OUT", str(reason))
        error = extension_error(
            "EXTENSION_CANCELLED", f'Extension "{name}" activation was cancelled'
        )
        if isinstance(reason, BaseException):
            error.__cause__ = reason
        return error

    async def _transaction(
        self,
        record: Record,
        controller: AbortController,
        stage: Stage,
        instance_dispose: list[Callable[[], object]],
    ) -> None:
        name = record.definition.id
        signal = controller.signal
        self._check_cancelled(name, controller, stage)
        cleanup = self.cleanup
        instance = await invoke(
            self.owner,
            record.definition.create,
            signal=signal,
            abandoned=cleanup.abandoned,
            on_late=lambda late: cleanup.dispose_late(name, late),
        )
        dispose = read_function(instance, "dispose")
        if dispose is not MISSING:
            if dispose is ACCESSOR or not callable(dispose):
                raise extension_error(
                    "INVALID_EXTENSION_DEFINITION",
                    f'Extension "{name}" dispose must be a function',
                )
            instance_dispose.append(dispose)
        activate = read_function(instance, "activate")
        if activate is MISSING or activate is ACCESSOR or not callable(activate):
            raise extension_error(
                "INVALID_EXTENSION_DEFINITION",
                f'Extension "{name}" instance must have an activate function',
            )
        self._check_cancelled(name, controller, stage)
        context = self._context(name, signal, stage)

        def selected() -> None:
            stage.open = False

        await invoke(
            self.owner,
            activate,
            context,
            signal=signal,
            on_selected=selected,
            abandoned=cleanup.abandoned,
        )
        stage.open = False
        self._check_cancelled(name, controller, stage)
        state = self.state
        candidate = ToolRegistry.snapshot(state.live)
        ToolRegistry.register_many(candidate, tuple(stage.tools))
        state.live = candidate
        record.hooks = tuple(stage.hooks)
        record.disposers = tuple(stage.disposers)
        record.dispose = instance_dispose[0] if instance_dispose else None
        state.order.append(name)
        record.status = "active"

    def _context(self, name: str, signal: AbortSignal, stage: Stage) -> ExtensionContext:
        def check_open() -> None:
            if not stage.open:
                raise extension_error("EXTENSION_ACTIVATION_FAILED", _CLOSED)

        def register_tool(definition: object) -> None:
            check_open()
            stage.tools.append(definition)

        def check_function(value: object, what: str) -> None:
            """The check of a hook registrar: the context is open and ``value`` a function."""
            check_open()
            if not callable(value):
                raise extension_error(
                    "INVALID_EXTENSION_DEFINITION", f'Extension "{name}" {what} must be a function'
                )

        def on_agent_event(hook: AgentEventHook) -> None:
            check_function(hook, "agent event hook")
            stage.hooks.append(hook)

        def on_dispose(disposer: ExtensionDisposer) -> None:
            check_function(disposer, "disposer")
            stage.disposers.append(disposer)

        return ExtensionContext(
            resources=self.state.resources,
            signal=signal,
            register_tool=register_tool,
            on_agent_event=on_agent_event,
            on_dispose=on_dispose,
        )

    async def _roll_back(
        self,
        record: Record,
        controller: AbortController,
        stage: Stage,
        instance_dispose: list[Callable[[], object]],
        error: Exception,
    ) -> None:
        stage.open = False
        name = record.definition.id
        if isinstance(error, ExtensionError) and error.code in _STOPPED:
            normalized = error
        elif self.state.status != "open" or signal_aborted(controller.signal):
            normalized = self._cancelled(name, controller, stage)
            if normalized.code == "EXTENSION_CANCELLED":
                normalized.__cause__ = error
        elif isinstance(error, ExtensionError):
            normalized = error
        else:
            normalized = extension_error(
                "EXTENSION_ACTIVATION_FAILED",
                f'Extension "{name}" activation failed: {failure_message(error)}',
            )
            normalized.__cause__ = error
        release = await self.cleanup.clean_up(name, (*reversed(stage.disposers), *instance_dispose))
        record.status = "failed"
        if release.escaping is not None:
            raise release.escaping
        failures = release.failures
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
        raise extension_error(
            "EXTENSION_ACTIVATION_ROLLBACK_FAILED",
            f'Extension "{name}" activation failed and {len(failures)} cleanup(s) failed',
        ) from aggregate
