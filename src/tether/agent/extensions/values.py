"""The values an extension author and a host user see: definitions, instances, the
activation context, statuses, metadata and hook failures. All frozen.

An ``ExtensionDefinition`` names an extension and keeps its factory dormant until the host
activates it. The factory returns an ``ExtensionInstance``: any object (a class instance, a
module, an exact ``dict``) with an ``activate(context)`` function and optionally a
``dispose()`` function, each of which may return a plain value or any awaitable. The host reads
them with ``inspect.getattr_static`` (never a ``__getattr__``, a property or another
descriptor's code); see ``ExtensionHost``.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, TypeGuard, cast

from tether._base.dataclass import dataclass
from tether._base.exact_types import type_of
from tether._base.strings import JS_WHITESPACE, is_non_empty
from tether.abort import AbortSignal
from tether.agent.extensions.errors import ExtensionError

if TYPE_CHECKING:
    from tether.agent.resources import ResourceLoader
    from tether.protocol import AgentEvent

__all__ = [
    "AgentEventHook",
    "ExtensionContext",
    "ExtensionDefinition",
    "ExtensionDisposer",
    "ExtensionFactory",
    "ExtensionHookFailure",
    "ExtensionInstance",
    "ExtensionMetadata",
    "ExtensionStatus",
]

ExtensionStatus: TypeAlias = Literal["discovered", "activating", "active", "failed", "disposed"]
"""Where an extension is: ``failed`` may be activated again; ``disposed`` is final."""

AgentEventHook: TypeAlias = "Callable[[AgentEvent], object | Awaitable[object]]"
"""A hook registered with ``ExtensionContext.on_agent_event``: called with each emitted event."""

ExtensionDisposer: TypeAlias = "Callable[[], object | Awaitable[object]]"
"""A cleanup registered with ``ExtensionContext.on_dispose``."""


class ExtensionInstance(Protocol):
    """What a factory returns: ``activate(context)`` and, optionally, ``dispose()``.

    Structural: any object with these functions works (``dispose`` is optional, so it is not
    part of the protocol's required members). Both may return an awaitable; the host awaits
    it (nested awaitables too, up to 32 levels).
    """

    def activate(self, context: ExtensionContext, /) -> object | Awaitable[object]:
        """Stage the extension's tools, hooks and disposers through ``context``."""
        ...


ExtensionFactory: TypeAlias = "Callable[[], ExtensionInstance | Awaitable[ExtensionInstance]]"
"""``ExtensionDefinition.create``: builds the instance, called only at activation."""


def is_extension_id(value: object) -> TypeGuard[str]:
    """A non-empty string without surrounding (JavaScript ``trim()``) whitespace."""
    return is_non_empty(value) and value.strip(JS_WHITESPACE) == value


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionDefinition:
    """An extension: its ``id`` (non-empty, no surrounding whitespace) and its factory.

    Raises ``ExtensionError`` ``INVALID_EXTENSION_DEFINITION`` for a bad id or a ``create``
    that is not callable. The factory is not called here, nor by ``discover``.
    """

    id: str
    create: ExtensionFactory

    def __post_init__(self) -> None:
        check_definition(self.id, self.create)


def check_timeout(value: object) -> float | None:
    """An extension host's ``timeout``: ``None`` (no bound) or a finite number of seconds above
    0, as a ``float``; anything else raises ``EXTENSION_INVALID_OPTIONS``."""
    if value is None:
        return None
    kind = type_of(value)
    if kind is int or kind is float:
        try:
            seconds = float(cast(float, value))
        except OverflowError:
            seconds = math.inf
        if math.isfinite(seconds) and seconds > 0:
            return seconds
    raise ExtensionError(
        "EXTENSION_INVALID_OPTIONS",
        "ExtensionHost timeout must be None or a finite number of seconds above 0",
    )


def check_definition(extension_id: object, create: object) -> None:
    """Raise ``INVALID_EXTENSION_DEFINITION`` unless the two fields are usable."""
    if not is_extension_id(extension_id):
        raise ExtensionError(
            "INVALID_EXTENSION_DEFINITION",
            "Extension id must be a non-empty string without surrounding whitespace",
        )
    if not callable(create):
        raise ExtensionError(
            "INVALID_EXTENSION_DEFINITION", f'Extension "{extension_id}" create must be a function'
        )


def untyped_definition(extension_id: object, create: object) -> ExtensionDefinition:
    """``ExtensionDefinition(id=extension_id, create=create)`` from values read untyped (a
    dict entry, a loaded entry point): its constructor checks both with ``check_definition``
    (``INVALID_EXTENSION_DEFINITION``), so the casts only say what it goes on to check."""
    return ExtensionDefinition(id=cast(str, extension_id), create=cast(ExtensionFactory, create))


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionContext:
    """What ``activate(context)`` receives: exactly five members.

    * ``resources``: the host's ``ResourceLoader``;
    * ``signal``: aborts when the activation is cancelled (the caller's signal or
      ``ExtensionHost.dispose()``);
    * ``register_tool(definition)``: stage a tool (validated when the activation commits);
    * ``on_agent_event(hook)``: stage a hook called with every emitted agent event;
    * ``on_dispose(disposer)``: stage a cleanup, run in reverse registration order on rollback
      or disposal.

    Staging closes once ``activate``'s outcome is known; later calls raise ``ExtensionError``
    ``EXTENSION_ACTIVATION_FAILED`` ("Extension activation context is closed"). A hook or
    disposer that is not callable raises ``INVALID_EXTENSION_DEFINITION``.
    """

    resources: ResourceLoader
    signal: AbortSignal
    register_tool: Callable[[object], None]
    on_agent_event: Callable[[AgentEventHook], None]
    on_dispose: Callable[[ExtensionDisposer], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionMetadata:
    """One discovered extension and its status (``ExtensionHost.extensions``)."""

    id: str
    status: ExtensionStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionHookFailure:
    """A hook that raised (or whose awaitable failed) during ``ExtensionHost.emit``.

    ``hook_index`` counts the extension's own hooks from 0 in registration order;
    ``message`` is the error's text, else its class name, else ``"Extension callback failed"``.
    """

    extension_id: str
    hook_index: int
    message: str
