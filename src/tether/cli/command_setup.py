"""What a model command starts from: the config file, the command line's overrides, the model.

``tether run --model``, ``tether chat`` and ``tether rpc`` read the config file once, apply
``--sandbox`` (checked against this machine) and ``--thinking`` to it, and choose the model
with it (``choose_with_config``), then load the extensions it names
(``extensions_or_warn``); ``tether models`` and ``tether mcp`` only read it
(``config_or_warn``). A problem is one line on stderr, ``tether COMMAND: [CODE] message``, and
the command exits with status 2.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tether.cli.render import warn

if TYPE_CHECKING:
    from tether.agent.extensions import ExtensionDefinition
    from tether.cli.config import CliConfig
    from tether.cli.models import ModelChoice

__all__ = ["choose_with_config", "config_or_warn", "extensions_or_warn"]


def config_or_warn(command: str) -> CliConfig | None:
    """The config file, checked (``tether.cli.config.load_config``); ``None`` after one line
    on stderr that says why it cannot be used."""
    from tether.cli.config import CliError, load_config

    try:
        return load_config()
    except CliError as error:
        warn(f"tether {command}: [{error.code}] {error}")
        return None


def extensions_or_warn(config: CliConfig, command: str) -> tuple[ExtensionDefinition, ...] | None:
    """The extensions ``config`` names (``tether.cli.session_config.configured_extensions``);
    ``None`` after one line on stderr when one cannot be loaded."""
    from tether.cli.config import CliError
    from tether.cli.session_config import configured_extensions

    try:
        return configured_extensions(config)
    except CliError as error:
        warn(f"tether {command}: [{error.code}] {error}")
        return None


def choose_with_config(
    args: argparse.Namespace, command: str
) -> tuple[ModelChoice, CliConfig] | None:
    """The model ``args`` select and the config file it was chosen with (``--sandbox`` and
    ``--thinking`` applied); ``None`` after one line on stderr."""
    from tether.cli.config import CliError, load_config, with_thinking_flag
    from tether.cli.models import choose_model

    try:
        config = with_thinking_flag(
            _sandboxed(args, load_config(), command), getattr(args, "thinking", None)
        )
        return choose_model(args.model, base_url=args.base_url, config=config), config
    except CliError as error:
        warn(f"tether {command}: [{error.code}] {error}")
        return None


def _sandboxed(args: argparse.Namespace, config: CliConfig, command: str) -> CliConfig:
    """``config`` with ``--sandbox`` (when given) in place of ``[tools] sandbox``, checked
    against this machine: ``on`` where bubblewrap cannot run is ``CLI_SANDBOX_UNAVAILABLE``
    (the command refuses to start); ``auto`` there says once, on stderr, that commands run
    unsandboxed and why."""
    import dataclasses

    from tether.cli.config import CliError

    mode = getattr(args, "sandbox", None) or config.tools.sandbox
    if mode != config.tools.sandbox:
        config = dataclasses.replace(config, tools=dataclasses.replace(config.tools, sandbox=mode))
    if mode == "off" or getattr(args, "tools", "coding") is None:
        return config
    from tether.tools.coding.sandbox import sandbox_status

    status = sandbox_status()
    if status.available:
        return config
    if mode == "on":
        raise CliError(
            "CLI_SANDBOX_UNAVAILABLE",
            f"the sandbox is on but cannot run: {status.reason} (or use --sandbox auto/off)",
        )
    warn(
        f"tether {command}: the sandbox cannot run here ({status.reason}); commands run unsandboxed"
    )
    return config
