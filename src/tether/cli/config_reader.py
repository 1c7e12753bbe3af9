"""Checking a parsed ``tether`` config file (``ConfigReader``): every table and key the
file may hold (``tether.cli.config``'s docstring), the first problem named by its dotted key
(``CLI_CONFIG_INVALID``), a key that looks like a secret never printed back."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, cast

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
from tether.cli.urls import http_url_problem
from tether.providers.registry import REGISTRY

if TYPE_CHECKING:
    from tether.mcp.config import McpServerConfig
    from tether.providers.thinking import ThinkingLevel

__all__ = ["SANDBOX_MODES", "ConfigReader"]
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


class ConfigReader:
    """Checks the parsed TOML of the file at ``path`` (``config``), naming the dotted key of
    the first problem."""

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
