"""The one place a mode of the ``tether`` command turns its options and the config file into
a ``tether.coding.CodingSessionConfig``: ``tether chat``, ``tether run -p`` and ``tether rpc``
all build their session here, so they send the same system prompt, load the same extensions
and ask about the same tools (the config's ``[tools] approve`` list, unless ``auto_approve``
or ``[tools] auto_approve = true``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tether.cli.config import CliConfig, CliError
from tether.cli.tracing import cli_tracing
from tether.tools.coding.catalog import sandbox_contained_tools

if TYPE_CHECKING:
    from tether.agent.extensions import ExtensionDefinition
    from tether.cli.models import ModelChoice
    from tether.coding import CodingSessionConfig, SessionPlace, ToolSet
    from tether.tools.coding.sandbox import Sandbox

__all__ = [
    "SANDBOXED_TOOLS",
    "ModeOptions",
    "coding_config",
    "configured_extensions",
    "mode_config",
    "sandbox_of",
]

SANDBOXED_TOOLS: frozenset[str] = sandbox_contained_tools()
"""The tools the sandbox contains: a sandboxed session does not ask before they run (they
can change only the workspace, reach no network and see no credentials): the process tools
whose only asking effect is ``execute`` (``tether.tools.coding.catalog``)."""


def sandbox_of(config: CliConfig) -> Sandbox | None:
    """The ``Sandbox`` the config's ``[tools] sandbox*`` settings describe (``None`` when
    ``sandbox = "off"``); ``--sandbox`` has already been written into ``config``."""
    tools = config.tools
    if tools.sandbox == "off":
        return None
    from tether.tools.coding.sandbox import DEFAULT_HIDDEN_PATHS, Sandbox

    return Sandbox(
        mode=tools.sandbox,
        network=tools.sandbox_network,
        hidden_paths=DEFAULT_HIDDEN_PATHS + tools.sandbox_hide,
    )


def configured_extensions(config: CliConfig) -> tuple[ExtensionDefinition, ...]:
    """The extensions the config file names, loaded from their entry points (``CliError``
    ``CLI_EXTENSION_UNAVAILABLE`` when one is missing or cannot be imported)."""
    if not config.extensions:
        return ()
    from tether.agent.extensions import ExtensionError, load_entry_point_extensions

    try:
        return load_entry_point_extensions(config.extensions)
    except ExtensionError as error:
        raise CliError(
            "CLI_EXTENSION_UNAVAILABLE",
            f"{config.path}: extension not loaded [{error.code}]: {error} "
            "(install its package, or remove it from 'extensions')",
        ) from None


def coding_config(
    choice: ModelChoice,
    config: CliConfig,
    *,
    cwd: Path,
    tools: ToolSet,
    introduction: str | None,
    sessions: SessionPlace,
    config_dir: Path | None,
    extensions: tuple[ExtensionDefinition, ...] = (),
    max_steps: int = 64,
    auto_approve: bool = False,
    sandbox_available: bool | None = None,
) -> CodingSessionConfig[ModelChoice]:
    """The session of a mode: ``choice``'s model in ``cwd`` with ``tools``, the system prompt
    of ``introduction`` and the context files and skills of ``cwd`` and ``config_dir``, the
    ``extensions`` (bounded by the config's ``extension_timeout``), sessions in
    ``sessions``, ``max_steps`` per prompt, the config's approvals and its sandbox.

    When commands will run sandboxed (``sandbox_available``: whether bubblewrap works here,
    asked of ``sandbox_status`` when ``None``), ``bash`` and ``python_process`` are not asked
    about (``SANDBOXED_TOOLS``)."""
    from tether.coding import ApprovalPolicy, CodingSessionConfig

    sandbox = sandbox_of(config)
    asked = frozenset(config.tools.approve)
    if sandbox is not None:
        if sandbox_available is None:
            from tether.tools.coding.sandbox import sandbox_status

            sandbox_available = sandbox_status(sandbox.bwrap).available
        if sandbox_available:
            asked -= SANDBOXED_TOOLS
    return CodingSessionConfig(
        model=choice,
        cwd=cwd,
        tools=tools,
        sandbox=sandbox,
        approval=ApprovalPolicy(
            tools=asked,
            auto=auto_approve or config.tools.auto_approve,
        ),
        introduction=introduction,
        config_dir=config_dir,
        extensions=extensions,
        extension_timeout=config.extension_timeout,
        sessions=sessions,
        max_steps=max_steps,
        mcp_servers=config.mcp_servers,
        tracing=cli_tracing(config, os.environ),
    )


class ModeOptions(Protocol):
    """What the options of ``tether run -p`` (``PrintOptions``) and ``tether rpc``
    (``RpcOptions``) say about their session."""

    @property
    def tools(self) -> ToolSet:
        """The tools (``none`` or ``coding``)."""
        ...

    @property
    def introduction(self) -> str | None:
        """What replaces the system prompt's first paragraph (``--system``)."""
        ...

    @property
    def max_steps(self) -> int:
        """Model steps per prompt."""
        ...

    @property
    def auto_approve(self) -> bool:
        """Whether tool calls run without being asked about."""
        ...

    def sessions(self) -> SessionPlace:
        """Where the session is kept."""
        ...


def mode_config(
    options: ModeOptions,
    choice: ModelChoice,
    config: CliConfig,
    extensions: tuple[ExtensionDefinition, ...] = (),
    *,
    where: tuple[Path, Path | None] | None = None,
) -> CodingSessionConfig[ModelChoice]:
    """The session of ``tether run -p`` or ``tether rpc`` (``coding_config`` with what
    ``options`` say) in the workspace and config directory ``where`` names (default: the
    current directory and ``tether.coding.context_files.user_config_dir()``)."""
    if where is None:
        from tether.coding.context_files import user_config_dir

        where = (Path.cwd(), user_config_dir())
    cwd, config_dir = where
    return coding_config(
        choice,
        config,
        cwd=cwd,
        tools=options.tools,
        introduction=options.introduction,
        sessions=options.sessions(),
        config_dir=config_dir,
        extensions=extensions,
        max_steps=options.max_steps,
        auto_approve=options.auto_approve,
    )
