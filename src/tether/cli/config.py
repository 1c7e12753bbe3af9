"""The ``tether`` config file: where it lives, what it may say, and the error when it says more.

Where: ``$TETHER_CONFIG`` when set and not empty (tests point it at a temporary file), else
``$XDG_CONFIG_HOME/tether/config.toml`` (when ``XDG_CONFIG_HOME`` is an absolute path, as
the XDG spec requires), else ``~/.config/tether/config.toml``. A file that does not exist is
the defaults: no default model, no custom providers, no model settings, and the tool
settings below. It is read with ``tomllib``, at most 1 MiB, and only if it is a regular file
(a FIFO could otherwise hold the command forever). Top-level keys come before the first
table (TOML puts a key after ``[tools]`` into that table)::

    default_model = "openai/gpt-4o-mini"     # PROVIDER/MODEL, used when --model is not given
    extensions = ["hello"]                   # installed extensions to load (entry points
                                             # of group "tether.extensions", by name)
    extension_timeout = 30                   # seconds an extension's activation, or one of
                                             # its cleanups, may take (then it fails)
    thinking = "medium"                      # off / minimal / low / medium / high: how much
                                             # models reason (tether.providers.thinking);
                                             # --thinking wins

    [providers.gpu-box]                      # a custom server (not a catalog preset's name)
    base_url = "http://gpu-box:8000/v1"      # required, http:// or https://
    api_key_env = "GPU_BOX_KEY"              # optional: the variable that holds its key
    api = "openai-chat"                      # optional: or "anthropic-messages" (the wire
                                             # APIs of tether.providers.registry)

    [models."openai/gpt-4o-mini"]            # settings of one PROVIDER/MODEL
    context_window = 128000                  # tokens (for context management)
    max_output_tokens = 4096                 # sent with every request
    input_price = 0.15                       # US dollars per million uncached input tokens
    output_price = 0.60                      # ... per million output tokens
    cache_read_price = 0.075                 # ... per million tokens read from the cache
    cache_write_price = 0.15                 # ... per million tokens written to it
    thinking = "high"                        # this model's level (beats the top-level one)

    [tools]                                  # how `tether chat` asks before tools run
    auto_approve = false
    approve = ["write_file", "edit_file", "bash", "python_process"]
    pass_env = ["GITHUB_TOKEN"]              # key variables bash/python_process may see
    sandbox = "off"                          # or "auto" / "on": bash and python_process in
                                             # bubblewrap (tether.tools.coding.sandbox)
    sandbox_network = false                  # sandboxed commands may reach the network
    sandbox_hide = ["~/work-secrets"]        # hidden too, besides DEFAULT_HIDDEN_PATHS

``[mcp_servers.NAME]`` tables configure MCP servers (Codex CLI's convention: ``command``,
``args``, ``env``, or ``url`` and ``headers``); ``tether.mcp.config`` checks them and
docs/mcp.md describes them.

``[models."PROVIDER/MODEL"]`` overrides the model catalog
(``tether.providers.model_catalog``) one setting at a time: a price or context window not set
here is the catalog's, when it knows the model. ``input_cost`` and ``output_cost`` are older
names of ``input_price`` and ``output_price`` (one of the two names per price). Without a price
for a kind of token the model spent (a custom server's cached tokens, say) the cost is
unknown, never 0.

``[tools]`` ``auto_approve`` and ``approve`` say which tool calls are asked about first:
``tether chat`` asks the person, ``tether rpc`` its client (an ``approval_request``, unless
``--auto-approve``); ``tether run`` has nobody to ask and never does (``--tools coding`` is
the opt-in there). ``pass_env`` is for all three: the processes
``bash`` and ``python_process`` start never get an API key variable (every catalog
provider's, every ``[providers.NAME]``'s ``api_key_env``, the active model's) unless it is
named here (``tether.tools.coding.environment``). ``sandbox`` (``--sandbox`` on the command
line wins) runs those processes inside bubblewrap: ``"on"`` refuses to run them where it
cannot, ``"auto"`` falls back to running them unsandboxed and says so once.

Everything is checked when the file is read; the result is frozen dataclasses. A key this
module does not know (a typo such as ``base-url``, or ``api_key``: keys are only ever read
from environment variables) is a ``CliConfigError`` naming the key and the file. No error
message ever quotes a value from the file, nor a key that looks like a secret (over 64
characters, or with a run of 16 letters and digits: it is shown as ``<a N-character key,
not shown>``): a key pasted where its variable's name belongs must not be printed back. A
``base_url`` must be a URL a request can go to (a host, a port from 1 to 65535;
``tether.cli.urls``). Arrays or tables nested too deeply for the parser are invalid too.

``CliError`` is the base of every error a person can act on (exit status 2); each carries a
stable ``code`` (``CLI_CONFIG_INVALID``, ``CLI_CONFIG_UNREADABLE`` here; the model
selection codes are in ``tether.cli.models``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final

from tether.cli.cli_errors import CliError, CliErrorCode
from tether.cli.config_reader import ConfigReader
from tether.cli.config_values import (
    APPROVABLE_TOOLS,
    DEFAULT_APPROVE,
    DEFAULT_EXTENSION_TIMEOUT,
    CliConfig,
    CliConfigError,
    ModelSettings,
    ProviderConfig,
    ToolSettings,
    TracingSettings,
)
from tether.coding.reading import UnreadableFile, read_regular_file

__all__ = [
    "APPROVABLE_TOOLS",
    "CONFIG_ENV",
    "DEFAULT_APPROVE",
    "DEFAULT_EXTENSION_TIMEOUT",
    "MAX_CONFIG_BYTES",
    "CliConfig",
    "CliConfigError",
    "CliError",
    "CliErrorCode",
    "ModelSettings",
    "ProviderConfig",
    "ToolSettings",
    "TracingSettings",
    "config_path",
    "load_config",
    "with_thinking_flag",
]

CONFIG_ENV: Final = "TETHER_CONFIG"
"""The environment variable that, when set and not empty, is the config file's path."""
MAX_CONFIG_BYTES: Final = 1 << 20
"""The largest config file read."""


def with_thinking_flag(config: CliConfig, level: str | None) -> CliConfig:
    """``config`` with ``--thinking LEVEL`` (when given) as every model's level: its top-level
    ``thinking``, and no model's own; ``config`` itself without the flag."""
    if level is None:
        return config
    import dataclasses

    from tether.providers.thinking import parse_thinking_level

    thinking = parse_thinking_level(level)
    models = {
        spec: dataclasses.replace(settings, thinking=None)
        for spec, settings in config.models.items()
    }
    return dataclasses.replace(config, thinking=thinking, models=MappingProxyType(models))


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the config file is (see the module docstring); ``environ`` defaults to
    ``os.environ``."""
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_ENV)
    if explicit:
        return Path(explicit)
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / "tether" / "config.toml"


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None) -> CliConfig:
    """The config at ``path`` (default: ``config_path(environ)``), checked; the defaults when
    the file does not exist. Raises ``CliConfigError``."""
    path = config_path(environ) if path is None else path
    data = _read(path)
    if data is None:
        return CliConfig(path=path)
    return ConfigReader(path).config(data)


def _read(path: Path) -> dict[str, object] | None:
    try:
        raw = read_regular_file(path, limit=MAX_CONFIG_BYTES)
    except UnreadableFile as problem:
        if problem.kind == "missing":
            return None
        if problem.kind == "too-large":
            raise CliConfigError(
                "CLI_CONFIG_INVALID", path, f"{problem.reason}: not a config file"
            ) from None
        raise CliConfigError("CLI_CONFIG_UNREADABLE", path, problem.reason) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CliConfigError("CLI_CONFIG_INVALID", path, "not valid UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:  # its message gives the line and column only
        raise CliConfigError("CLI_CONFIG_INVALID", path, f"not valid TOML: {error}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise CliConfigError(
            "CLI_CONFIG_INVALID", path, "not valid TOML: arrays or tables nested too deeply"
        ) from None
