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
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, cast

if TYPE_CHECKING:
    from tether.mcp.config import McpServerConfig
    from tether.providers.model_catalog import ModelPrices
    from tether.providers.thinking import ThinkingLevel
    from tether.tools.coding.sandbox import SandboxMode

from tether._errors import TetherError
from tether.cli.reading import UnreadableFile, read_regular_file
from tether.cli.urls import http_url_problem
from tether.providers.registry import REGISTRY, ProviderApi
from tether.tools.coding.catalog import coding_tool_names, default_approvals

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
DEFAULT_EXTENSION_TIMEOUT: Final = 30.0
"""Seconds an extension's activation, or one of its cleanups, may take by default
(``tether.agent.extensions.EXTENSION_TIMEOUT``; a test keeps them equal)."""

APPROVABLE_TOOLS: Final = coding_tool_names()
"""The coding tools a ``[tools] approve`` list may name (``tether.tools.coding.catalog``)."""
DEFAULT_APPROVE: Final = default_approvals()
"""The tools asked about before they run, unless the config says otherwise: the coding tools
whose declared effects include a write, an execution or the network."""

_TOP_KEYS: Final = (
    "default_model",
    "extensions",
    "extension_timeout",
    "thinking",
    "providers",
    "models",
    "tools",
    "mcp_servers",
    "tracing",
)
_TRACING_KEYS: Final = ("enabled", "record_content")
_PROVIDER_KEYS: Final = ("base_url", "api_key_env", "api")
_MAX_PRICE: Final = 1e9
"""A price per million tokens must be below this (and not NaN: TOML allows ``nan``)."""
_MODEL_KEYS: Final = (
    "context_window",
    "max_output_tokens",
    "input_price",
    "output_price",
    "cache_read_price",
    "cache_write_price",
    "input_cost",
    "output_cost",
    "thinking",
)
_PRICE_ALIASES: Final = {"input_price": "input_cost", "output_price": "output_cost"}
"""The older names of two prices (still read)."""
SANDBOX_MODES: Final = ("off", "auto", "on")
"""``tether.tools.coding.sandbox.SandboxMode``'s values, spelled out so that reading the
config loads no coding tool (a test keeps the two equal)."""
_TOOL_KEYS: Final = (
    "auto_approve",
    "approve",
    "pass_env",
    "sandbox",
    "sandbox_network",
    "sandbox_hide",
)
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SHOWN_KEY: Final = 64
_SECRET_RUN: Final = 16
_SECRET_LIKE: Final = re.compile(rf"[A-Za-z0-9]{{{_SECRET_RUN},}}")
_VARIABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CliErrorCode: TypeAlias = Literal[
    "CLI_CONFIG_INVALID",
    "CLI_CONFIG_UNREADABLE",
    "CLI_NO_MODEL",
    "CLI_INVALID_MODEL_SPEC",
    "CLI_UNKNOWN_PROVIDER",
    "CLI_MISSING_API_KEY",
    "CLI_SERVER_UNREACHABLE",
    "CLI_AUTH_FAILED",
    "CLI_RATE_LIMITED",
    "CLI_CONTEXT_OVERFLOW",
    "CLI_EXTENSION_UNAVAILABLE",
    "CLI_SANDBOX_UNAVAILABLE",
    "CLI_TRACING_UNAVAILABLE",
    "CLI_EXPORT_FAILED",
    "CLI_EVAL_TASKS_INVALID",
    "CLI_EVAL_TASKS_UNREADABLE",
    "CLI_EVAL_BASELINE_UNREADABLE",
    "CLI_EVAL_WRITE_FAILED",
    "CLI_EVAL_RAY_MISSING",
    "CLI_EVAL_RAY_FAILED",
]
"""Every code a ``CliError`` carries: a typo in one is a type error, not a new code."""


class CliError(TetherError[CliErrorCode]):
    """A problem a person can fix (exit status 2): ``code`` is stable, the message says what to
    do. Never carries a secret."""

    def __init__(self, code: CliErrorCode, message: str) -> None:
        super().__init__(code, message)


class CliConfigError(CliError):
    """The config file is invalid (``CLI_CONFIG_INVALID``) or cannot be read
    (``CLI_CONFIG_UNREADABLE``); the message names the file and, when there is one, the key."""

    def __init__(
        self, code: Literal["CLI_CONFIG_INVALID", "CLI_CONFIG_UNREADABLE"], path: Path, detail: str
    ) -> None:
        super().__init__(code, f"{path}: {detail}")
        self._path = path

    @property
    def path(self) -> Path:
        """The config file."""
        return self._path


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderConfig:
    """A custom provider from ``[providers.NAME]``: a server at ``base_url`` that speaks
    ``api`` (an API of ``tether.providers.registry.REGISTRY``; OpenAI Chat Completions by
    default); ``api_key_env`` names the variable holding its key (``None``: no key is
    sent)."""

    name: str
    base_url: str
    api_key_env: str | None = None
    api: ProviderApi = "openai-chat"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """``[models."PROVIDER/MODEL"]``: the model's context window in tokens, the output
    tokens to ask for, and its prices in US dollars per million tokens of uncached input,
    output, cache reads and cache writes, and its thinking level (``None``: not configured)."""

    context_window: int | None = None
    max_output_tokens: int | None = None
    input_price: float | None = None
    output_price: float | None = None
    cache_read_price: float | None = None
    cache_write_price: float | None = None
    thinking: ThinkingLevel | None = None

    @property
    def input_cost(self) -> float | None:
        """``input_price`` by its older name."""
        return self.input_price

    @property
    def output_cost(self) -> float | None:
        """``output_price`` by its older name."""
        return self.output_price

    @property
    def prices(self) -> ModelPrices:
        """The configured prices (``tether.providers.model_catalog.ModelPrices``)."""
        from tether.providers.model_catalog import ModelPrices

        return ModelPrices(
            input=self.input_price,
            output=self.output_price,
            cache_read=self.cache_read_price,
            cache_write=self.cache_write_price,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSettings:
    """``[tools]``: whether every tool call runs without asking (``auto_approve``), which
    tools are asked about first (``approve``), and which key variables tool processes may
    see after all (``pass_env``); whether ``bash`` and ``python_process`` run in the
    bubblewrap sandbox (``sandbox``: ``"off"``, ``"auto"`` or ``"on"``), with network access
    (``sandbox_network``) and which paths it hides besides the defaults (``sandbox_hide``)."""

    auto_approve: bool = False
    approve: tuple[str, ...] = DEFAULT_APPROVE
    pass_env: tuple[str, ...] = ()
    sandbox: SandboxMode = "off"
    sandbox_network: bool = False
    sandbox_hide: tuple[str, ...] = ()


def _empty_providers() -> Mapping[str, ProviderConfig]:
    return MappingProxyType({})


def _empty_models() -> Mapping[str, ModelSettings]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class CliConfig:
    """The config as read from ``path`` (``found``: whether the file existed). ``providers``
    and ``models`` are read-only mappings, in the file's order."""

    path: Path
    found: bool = False
    default_model: str | None = None
    providers: Mapping[str, ProviderConfig] = field(default_factory=_empty_providers)
    models: Mapping[str, ModelSettings] = field(default_factory=_empty_models)
    tools: ToolSettings = field(default_factory=ToolSettings)
    extensions: tuple[str, ...] = ()
    """Names of installed extensions (entry points of group ``tether.extensions``) that
    ``tether chat`` activates, in this order."""
    extension_timeout: float = DEFAULT_EXTENSION_TIMEOUT
    """Seconds one activation of an extension, or one of its cleanups, may take in
    ``tether chat`` before it fails ``EXTENSION_TIMED_OUT``."""
    mcp_servers: tuple[McpServerConfig, ...] = ()
    """The ``[mcp_servers.NAME]`` tables, in the file's order (``tether.mcp.config``;
    docs/mcp.md)."""
    thinking: ThinkingLevel | None = None
    """The thinking level of every model without one of its own in ``models`` (``None``:
    each model's default)."""
    tracing: TracingSettings = field(default_factory=lambda: TracingSettings())
    """``[tracing]``: OpenTelemetry traces of the runs (``tether.cli.tracing``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TracingSettings:
    """``[tracing]``: ``enabled`` exports every run's spans over OTLP/HTTP (to the standard
    ``OTEL_EXPORTER_OTLP_*`` endpoint; setting ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` enables it too); ``record_content`` adds the
    prompts, answers and tool arguments and results to the spans (off by default)."""

    enabled: bool = False
    record_content: bool = False


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
    return _Reader(path).config(data)


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


class _Reader:
    """Checks the parsed TOML, naming the dotted key of the first problem."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, detail: str) -> CliConfigError:
        return CliConfigError("CLI_CONFIG_INVALID", self.path, detail)

    def table(self, value: object, key: str) -> dict[str, object]:
        if not isinstance(value, dict):
            raise self.fail(f"'{key}' must be a table")
        return cast("dict[str, object]", value)

    def known(self, table: Mapping[str, object], allowed: tuple[str, ...], prefix: str) -> None:
        for key in table:
            if key not in allowed:
                dotted = f"{prefix}{_key(key)}"
                hint = ""
                if key == "api_key":
                    hint = "; keys are read from environment variables: set api_key_env"
                raise self.fail(f"unknown key '{dotted}' (known here: {', '.join(allowed)}){hint}")

    def config(self, data: dict[str, object]) -> CliConfig:
        self.known(data, _TOP_KEYS, "")
        providers = self.providers(data.get("providers", {}))
        names = set(REGISTRY.presets()) | set(providers)
        default = data.get("default_model")
        if default is not None:
            default = self.spec(default, "default_model", names)
        models = self.models(data.get("models", {}), names)
        tools = self.tools(data.get("tools", {}))
        extensions = self.extensions(data.get("extensions", []))
        timeout = self.seconds(data.get("extension_timeout", DEFAULT_EXTENSION_TIMEOUT))
        mcp_servers = self.mcp_servers(data["mcp_servers"]) if "mcp_servers" in data else ()
        tracing = self.tracing(data.get("tracing", {}))
        thinking = self.thinking(data.get("thinking"), "thinking")
        return CliConfig(
            path=self.path,
            found=True,
            default_model=default,
            providers=MappingProxyType(providers),
            models=MappingProxyType(models),
            tools=tools,
            extensions=extensions,
            extension_timeout=timeout,
            mcp_servers=mcp_servers,
            thinking=thinking,
            tracing=tracing,
        )

    def mcp_servers(self, value: object) -> tuple[McpServerConfig, ...]:
        """``[mcp_servers.NAME]``: checked by ``tether.mcp.config`` (its message, this file)."""
        from tether.mcp.config import parse_mcp_servers
        from tether.mcp.errors import McpError

        try:
            return parse_mcp_servers(value)
        except McpError as error:
            raise self.fail(error.message) from None

    def thinking(self, value: object, key: str) -> ThinkingLevel | None:
        from tether.providers.thinking import THINKING_LEVELS, parse_thinking_level

        if value is None:
            return None
        try:
            return parse_thinking_level(value)
        except ValueError:
            raise self.fail(f"'{key}' must be one of: {', '.join(THINKING_LEVELS)}") from None

    def seconds(self, value: object) -> float:
        if (type(value) is int or type(value) is float) and 0 < value <= 86_400:
            return float(value)  # NaN fails the comparison
        raise self.fail("'extension_timeout' must be a number of seconds from 0 to 86400")

    def extensions(self, value: object) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail("'extensions' must be a list of extension names")
        names: list[str] = []
        for item in cast("list[object]", value):
            if not isinstance(item, str) or not _NAME.fullmatch(item):
                raise self.fail(
                    "'extensions' may hold only entry point names (letters, digits, '.', '_', '-')"
                )
            if item in names:
                raise self.fail(f"'extensions' names '{_key(item)}' twice")
            names.append(item)
        return tuple(names)

    def spec(self, value: object, key: str, names: set[str]) -> str:
        if not isinstance(value, str):
            raise self.fail(f"'{key}' must be a string PROVIDER/MODEL")
        provider, slash, model = value.partition("/")
        if not slash or not provider or not model.strip():
            raise self.fail(f"'{key}' must be PROVIDER/MODEL, e.g. openai/gpt-4o-mini")
        if provider not in names:
            raise self.fail(
                f"'{key}' names an unknown provider; known providers: {', '.join(sorted(names))}"
            )
        return value

    def providers(self, value: object) -> dict[str, ProviderConfig]:
        table = self.table(value, "providers")
        result: dict[str, ProviderConfig] = {}
        for name, entry in table.items():
            key = f"providers.{_key(name)}"
            if not _NAME.fullmatch(name):
                raise self.fail(f"'{key}': a provider name is letters, digits, '.', '_', '-'")
            if name in REGISTRY.presets():
                raise self.fail(
                    f"'{key}': '{name}' is a built-in provider; give your server another name "
                    "(or pass --base-url to point the built-in one elsewhere)"
                )
            fields = self.table(entry, key)
            self.known(fields, _PROVIDER_KEYS, f"{key}.")
            api = fields.get("api", "openai-chat")
            spec = REGISTRY.get(api) if isinstance(api, str) else None
            if spec is None:
                raise self.fail(f"'{key}.api' must be one of: {', '.join(REGISTRY.names())}")
            base_url = fields.get("base_url")
            if base_url is None:
                raise self.fail(
                    f"'{key}.base_url' is missing (for api {spec.name}, e.g. "
                    f"{spec.base_url_example})"
                )
            if not isinstance(base_url, str):
                raise self.fail(f"'{key}.base_url' must be an http:// or https:// URL")
            problem = http_url_problem(base_url)
            if problem is not None:
                raise self.fail(f"'{key}.base_url' {problem}")
            variable = fields.get("api_key_env")
            if variable is not None and (
                not isinstance(variable, str) or not _VARIABLE.fullmatch(variable)
            ):
                raise self.fail(
                    f"'{key}.api_key_env' must be the NAME of an environment variable "
                    "(letters, digits and '_'), not the key itself"
                )
            result[name] = ProviderConfig(
                name=name,
                base_url=base_url,
                api_key_env=variable,
                api=spec.name,
            )
        return result

    def models(self, value: object, names: set[str]) -> dict[str, ModelSettings]:
        table = self.table(value, "models")
        result: dict[str, ModelSettings] = {}
        for spec, entry in table.items():
            key = f"models.{_key(spec)}"
            self.spec(spec, key, names)
            fields = self.table(entry, key)
            self.known(fields, _MODEL_KEYS, f"{key}.")
            result[spec] = ModelSettings(
                context_window=self.positive(fields.get("context_window"), f"{key}.context_window"),
                max_output_tokens=self.positive(
                    fields.get("max_output_tokens"), f"{key}.max_output_tokens"
                ),
                input_price=self.named_price(fields, key, "input_price"),
                output_price=self.named_price(fields, key, "output_price"),
                cache_read_price=self.named_price(fields, key, "cache_read_price"),
                cache_write_price=self.named_price(fields, key, "cache_write_price"),
                thinking=self.thinking(fields.get("thinking"), f"{key}.thinking"),
            )
        return result

    def named_price(self, fields: Mapping[str, object], key: str, name: str) -> float | None:
        """The price ``name`` of the table ``key``, or by its older name (not both)."""
        alias = _PRICE_ALIASES.get(name)
        if alias is not None and alias in fields:
            if name in fields:
                raise self.fail(
                    f"'{key}.{alias}' is the older name of '{key}.{name}': give only one"
                )
            name = alias
        return self.price(fields.get(name), f"{key}.{name}")

    def price(self, value: object, key: str) -> float | None:
        if value is None:
            return None
        if type(value) not in (int, float) or not 0 <= cast("float", value) < _MAX_PRICE:
            raise self.fail(
                f"'{key}' must be a number from 0 to {_MAX_PRICE:g} (per million tokens)"
            )
        return float(cast("float", value))

    def positive(self, value: object, key: str) -> int | None:
        if value is None:
            return None
        if type(value) is not int or value < 1:
            raise self.fail(f"'{key}' must be a positive integer")
        return value

    def tracing(self, value: object) -> TracingSettings:
        table = self.table(value, "tracing")
        self.known(table, _TRACING_KEYS, "tracing.")
        for key in _TRACING_KEYS:
            if type(table.get(key, False)) is not bool:
                raise self.fail(f"'tracing.{key}' must be true or false")
        return TracingSettings(
            enabled=bool(table.get("enabled", False)),
            record_content=bool(table.get("record_content", False)),
        )

    def tools(self, value: object) -> ToolSettings:
        table = self.table(value, "tools")
        self.known(table, _TOOL_KEYS, "tools.")
        auto = table.get("auto_approve", False)
        if type(auto) is not bool:
            raise self.fail("'tools.auto_approve' must be true or false")
        approve = table.get("approve", list(DEFAULT_APPROVE))
        if not isinstance(approve, list):
            raise self.fail("'tools.approve' must be a list of tool names")
        names: list[str] = []
        for item in cast("list[object]", approve):
            if not isinstance(item, str) or item not in APPROVABLE_TOOLS:
                raise self.fail(
                    f"'tools.approve' may name only these tools: {', '.join(APPROVABLE_TOOLS)}"
                )
            if item not in names:
                names.append(item)
        sandbox = table.get("sandbox", "off")
        if sandbox not in SANDBOX_MODES:
            raise self.fail(f"'tools.sandbox' must be one of {', '.join(SANDBOX_MODES)}")
        network = table.get("sandbox_network", False)
        if type(network) is not bool:
            raise self.fail("'tools.sandbox_network' must be true or false")
        return ToolSettings(
            auto_approve=auto,
            approve=tuple(names),
            pass_env=self.variables(table, "pass_env"),
            sandbox=sandbox,
            sandbox_network=network,
            sandbox_hide=self.hidden_paths(table.get("sandbox_hide", [])),
        )

    def hidden_paths(self, value: object) -> tuple[str, ...]:
        """``[tools] sandbox_hide``: absolute or ``~/`` paths (never quoted back)."""
        items = cast("list[object]", value) if isinstance(value, list) else None
        if items is None or not all(
            isinstance(item, str)
            and item
            and "\0" not in item
            and (item.startswith(("/", "~/")) or item == "~")
            for item in items
        ):
            raise self.fail("'tools.sandbox_hide' must be a list of absolute or ~/ paths")
        return tuple(cast("list[str]", items))

    def variables(self, table: Mapping[str, object], key: str) -> tuple[str, ...]:
        """A list of environment variable names (never quoted back: it may hold a key)."""
        value = table.get(key, [])
        items = cast("list[object]", value) if isinstance(value, list) else None
        if items is None or not all(
            isinstance(item, str) and _VARIABLE.fullmatch(item) for item in items
        ):
            raise self.fail(
                f"'tools.{key}' must be a list of environment variable NAMES "
                "(letters, digits and '_')"
            )
        return tuple(dict.fromkeys(cast("list[str]", items)))


def _key(name: str) -> str:
    """A TOML key as a message shows it: bare when it can be, else quoted; a key that looks
    like a secret (longer than ``_SHOWN_KEY`` characters, or holding a run of
    ``_SECRET_RUN`` letters and digits, as API keys do) as ``<a N-character key, not
    shown>``: a key pasted where a name belongs must not be printed back."""
    if len(name) > _SHOWN_KEY or _SECRET_LIKE.search(name) is not None:
        return f"<a {len(name)}-character key, not shown>"
    if re.fullmatch(r"[A-Za-z0-9_-]+", name) is not None:
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
