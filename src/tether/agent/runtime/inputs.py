"""The frozen inputs each factory step receives (and may pass, changed, to its fallback).

A fallback accepts only an input of the same class for the same workspace (``TypeError``
otherwise): an override may change what the default factory builds (another model, other
tools) but not where.
"""

from __future__ import annotations

from tether._base.dataclass import dataclass
from tether.agent.extensions import ExtensionDefinition
from tether.agent.resources import ResourceLoader, ResourceRootDefinition
from tether.agent.runtime.options import RuntimeAgentOptions
from tether.agent.runtime.workspace_root import RuntimeWorkspace
from tether.agent.session import SessionStoreOptions, SessionTree
from tether.models.base import Model
from tether.protocol import Message
from tether.tools import ToolRegistry

__all__ = [
    "RuntimeAgentInput",
    "RuntimeExtensionsInput",
    "RuntimeResourcesInput",
    "RuntimeSessionInput",
    "RuntimeToolsInput",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class _StepInput:
    """What every step's input holds first: the ``workspace`` the step builds for (a
    fallback takes only an input for the same one)."""

    workspace: RuntimeWorkspace


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeToolsInput(_StepInput):
    """Tools step: the default is ``coding_tools(root)`` followed by ``base_tools`` (a copy)."""

    base_tools: ToolRegistry


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeResourcesInput(_StepInput):
    """Resources step: the default loader has the ``workspace`` root, then ``roots``."""

    roots: tuple[ResourceRootDefinition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeSessionInput(_StepInput):
    """Session step: the default loads (``resume``) or creates (``create``) the session file
    at ``workspace.session_path`` with ``options``; the product is a ``SessionStore`` on that
    very file."""

    options: SessionStoreOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeExtensionsInput(_StepInput):
    """Extensions step: the default host gets ``resources`` and ``tools`` (the tools step's
    product), discovers ``definitions`` and activates them in order."""

    resources: ResourceLoader
    tools: ToolRegistry
    definitions: tuple[ExtensionDefinition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeAgentInput(_StepInput):
    """Agent step: the default is ``resume_agent(session, model=..., tools=..., max_steps=...,
    **options)``, an Agent over the session's active context recording into it. ``messages``
    is that context as a transcript (the compaction summary first, if any), for overrides."""

    model: Model
    tools: ToolRegistry
    session: SessionTree
    messages: tuple[Message, ...]
    max_steps: int | None
    options: RuntimeAgentOptions
