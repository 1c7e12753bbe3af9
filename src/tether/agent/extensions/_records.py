"""What an ``ExtensionHost`` keeps: a record per discovered extension, the stage of the
activation in flight, the host's shared state, and the errors it makes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

from tether._base.strings import is_non_empty, message_of
from tether.abort import AbortController
from tether.agent.extensions.errors import ExtensionError, ExtensionErrorCode
from tether.agent.extensions.values import (
    AgentEventHook,
    ExtensionDefinition,
    ExtensionDisposer,
    ExtensionStatus,
)
from tether.agent.resources import ResourceLoader
from tether.tools.tool_registry import ToolRegistry

__all__ = [
    "REENTRANT",
    "HostState",
    "Record",
    "Stage",
    "extension_error",
    "failure_message",
    "nothing",
    "timed_out",
]

_CALLBACK_FAILED: Final = "Extension callback failed"
REENTRANT: Final = "ExtensionHost operations cannot be called from inside an extension callback"


def nothing() -> None:
    """Do nothing (a disarm with nothing armed)."""
    return


def failure_message(error: BaseException) -> str:
    """The error's text, else its class name, else the generic text."""
    name = type(error).__name__
    return message_of(error, name if is_non_empty(name) else _CALLBACK_FAILED)


def extension_error(code: ExtensionErrorCode, message: str) -> ExtensionError:
    """An ``ExtensionError`` with ``code``."""
    return ExtensionError(code, message)


def timed_out(name: str, what: str, seconds: float) -> ExtensionError:
    """``EXTENSION_TIMED_OUT`` for ``name``'s ``what`` (activation, disposal)."""
    return extension_error(
        "EXTENSION_TIMED_OUT", f'Extension "{name}" {what} did not finish within {seconds:g} s'
    )


@dataclass(slots=True, kw_only=True)
class Record:
    """One discovered extension: its definition, status and what its activation committed."""

    definition: ExtensionDefinition
    status: ExtensionStatus = "discovered"
    hooks: tuple[AgentEventHook, ...] = ()
    disposers: tuple[ExtensionDisposer, ...] = ()
    dispose: Callable[[], object] | None = None


@dataclass(slots=True, kw_only=True)
class Stage:
    """What an activation in flight staged (visible only once it commits)."""

    open: bool = True
    tools: list[object] = field(default_factory=list[object])
    hooks: list[AgentEventHook] = field(default_factory=list[AgentEventHook])
    disposers: list[ExtensionDisposer] = field(default_factory=list[ExtensionDisposer])
    timed_out: object = None  # the abort reason the activation's bound uses, once armed


@dataclass(slots=True, kw_only=True, eq=False)
class HostState:
    """What every part of a host reads: its resources and base tools, the live tools, the
    records (in discovery order), the active ones (in activation order), whether it is open,
    and the controller of the activation in flight."""

    resources: ResourceLoader
    base: ToolRegistry
    live: ToolRegistry
    records: dict[str, Record] = field(default_factory=dict[str, Record])
    order: list[str] = field(default_factory=list[str])
    status: Literal["open", "disposing", "disposed"] = "open"
    activation: AbortController | None = None
