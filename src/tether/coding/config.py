"""The one typed configuration of a coding session (``CodingSessionConfig``).

Every mode of the CLI (``tether chat``, ``tether run -p``, ``tether rpc``) builds one of these
from its options and hands it to ``CodingSession``; nothing else travels into the session
(no ``argparse.Namespace``). ``ModelSource`` is what the session needs of a model choice
(``tether.cli.models.ModelChoice`` is one).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Generic, Literal, Protocol, TypeAlias, TypeVar

from tether._base.dataclass import dataclass
from tether.tools.coding.catalog import default_approvals

if TYPE_CHECKING:
    from tether.agent.extensions import ExtensionDefinition
    from tether.mcp.config import McpServerConfig
    from tether.models.base import Model
    from tether.models.limits import RunLimits
    from tether.protocol import ModelUsage
    from tether.tools.coding.sandbox import Sandbox
    from tether.tracing._config import Tracing

__all__ = [
    "APPROVED_BY_DEFAULT",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_STEPS",
    "ApprovalPolicy",
    "CodingSessionConfig",
    "InterruptedTurns",
    "ModelSource",
    "SessionPlace",
    "ToolSet",
]

DEFAULT_CONTEXT_WINDOW: Final = 128_000
"""Tokens assumed for a model whose ``context_window`` is not known."""
DEFAULT_MAX_STEPS: Final = 64
"""Model steps per prompt unless the config says otherwise."""
APPROVED_BY_DEFAULT: Final = default_approvals()
"""The tools whose calls are asked about unless the policy says otherwise: the coding tools
whose declared effects ask (``tether.tools.coding.catalog``)."""

ToolSet: TypeAlias = Literal["coding", "none"]
"""``coding``: the seven coding tools confined to the workspace (and ``load_skill`` when the
workspace has skills); ``none``: no tools of the session's own (extensions may add some)."""
InterruptedTurns: TypeAlias = Literal["keep", "discard"]
"""What the Agent does with a turn cancelled half-way (see ``CodingSessionConfig``)."""


class ModelSource(Protocol):
    """What a coding session needs of a model choice: its name (``spec``, e.g.
    ``"openai/gpt-4o-mini"``), its context window if known, the environment variables its
    tools' processes must not see (``hidden_env``, except ``pass_env``), a way to build
    the ``Model`` (``build``; the session closes what it built) and what a response's usage
    costs (``cost``)."""

    @property
    def spec(self) -> str: ...

    @property
    def context_window(self) -> int | None: ...

    @property
    def hidden_env(self) -> tuple[str, ...]: ...

    @property
    def pass_env(self) -> tuple[str, ...]: ...

    def build(self, *, cache_key: str | None = None) -> Model:
        """A new model; ``cache_key`` is the session's stable key for the provider's prompt
        cache (a model that has no use for one ignores it)."""
        ...

    def cost(self, usage: ModelUsage) -> float | None:
        """What ``usage`` costs on this model (``None``: its prices are not known)."""
        ...


M = TypeVar("M", bound=ModelSource)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalPolicy:
    """Which tool calls are asked about before they run: those of ``tools``, and an MCP
    server's tools unless its ``approval`` (or ``tool_approval``) says ``"auto"``, unless
    ``auto`` (never ask). A call that is asked about goes to the session's approver (the
    mode: the terminal in chat, an ``approval_request`` in RPC); without one it is
    declined."""

    tools: frozenset[str] = frozenset(APPROVED_BY_DEFAULT)
    auto: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionPlace:
    """Where the session files live.

    * ``directory`` set: a directory of sessions named ``<id>.jsonl`` (``tether chat``,
      ``tether rpc``); ``new_session`` creates one there, ``resume`` finds one by ID or
      unique prefix. The directory is made (mode 0700) when missing.
    * ``file`` set: that one file, resumed when it exists, else created (``tether run
      --session PATH``).
    * neither: an ephemeral session in a private temporary directory, removed at ``close``
      (``tether run -p`` without ``--session``): the same session machinery, nothing kept.
    """

    directory: Path | None = None
    file: Path | None = None

    def __post_init__(self) -> None:
        if self.directory is not None and self.file is not None:
            raise ValueError("SessionPlace takes a directory or a file, not both")


@dataclass(frozen=True, slots=True, kw_only=True)
class CodingSessionConfig(Generic[M]):
    """Everything a ``CodingSession`` is built from.

    * ``model``: the first model (``switch_model`` changes it); ``build_model`` makes its
      ``Model`` (default: ``model.build()``; tests pass a scripted one).
    * ``cwd``: the workspace; ``tools``: ``ToolSet``; ``approval``: ``ApprovalPolicy``.
    * The system prompt: ``introduction`` (``None``: the default paragraph), then the tool
      names, today's date (``today``, default: the real date) and the project directory,
      then the context files (``AGENTS.md``/``CLAUDE.md`` of ``config_dir`` and of every
      directory from ``/`` down to ``cwd``) when ``context_files``, then the skills section
      (when ``skills`` and the workspace or ``config_dir`` has skills).
    * ``extensions`` (activated in every runtime, bounded by ``extension_timeout`` seconds).
    * ``sessions``: ``SessionPlace``.
    * ``max_steps`` per prompt, ``limits`` (``RunLimits``; ``None``: the real-model limits,
      ``RunLimits.for_real_models()``, made when the session starts: importing the loop to
      build them here would load it before ``tether chat`` shows its prompt).
    * ``interrupted_turns``: what the Agent keeps of a cancelled turn (see ``CodingSession``).
    * ``tracing``: how the Agent's runs are traced (``tether.tracing.Tracing``; ``None``: not).
    * ``sandbox``: how ``bash`` and ``python_process`` are sandboxed (``None``: not at all;
      ``tether.tools.coding.sandbox``).
    * ``mcp_servers``: MCP servers (``tether.mcp``) every runtime of the session starts and
      stops; their tools are offered as ``SERVER__TOOL`` and asked about by default. One
      that fails to start is a ``SessionNotice`` naming it (once); the others work.
    """

    model: M
    cwd: Path
    tools: ToolSet = "coding"
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    introduction: str | None = None
    context_files: bool = True
    skills: bool = True
    config_dir: Path | None = None
    today: datetime.date | None = None
    extensions: tuple[ExtensionDefinition, ...] = ()
    extension_timeout: float | None = 30.0
    sessions: SessionPlace = field(default_factory=SessionPlace)
    max_steps: int = DEFAULT_MAX_STEPS
    limits: RunLimits | None = None
    interrupted_turns: InterruptedTurns = "keep"
    tracing: Tracing | None = None
    sandbox: Sandbox | None = None
    build_model: Callable[[M], Model] | None = None
    mcp_servers: tuple[McpServerConfig, ...] = ()
