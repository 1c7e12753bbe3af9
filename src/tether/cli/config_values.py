"""What a read ``tether`` config file is (``CliConfig`` and its tables), the defaults it
starts from, and the error of a config file that says more (``CliConfigError``). The file
itself, where it lives and what it may say, is ``tether.cli.config``'s docstring."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

from tether._base.dataclass import dataclass
from tether.cli.cli_errors import CliError
from tether.providers.registry import ProviderApi
from tether.tools.coding.catalog import coding_tool_names, default_approvals

if TYPE_CHECKING:
    from tether.mcp.config import McpServerConfig
    from tether.providers.model_catalog import ModelPrices
    from tether.providers.thinking import ThinkingLevel
    from tether.tools.coding.sandbox import SandboxMode

__all__ = [
    "APPROVABLE_TOOLS",
    "DEFAULT_APPROVE",
    "DEFAULT_EXTENSION_TIMEOUT",
    "CliConfig",
    "CliConfigError",
    "ModelSettings",
    "ProviderConfig",
    "ToolSettings",
    "TracingSettings",
]
DEFAULT_EXTENSION_TIMEOUT: Final = 30.0
"""Seconds an extension's activation, or one of its cleanups, may take by default
(``tether.agent.extensions.EXTENSION_TIMEOUT``; a test keeps them equal)."""

APPROVABLE_TOOLS: Final = coding_tool_names()
"""The coding tools a ``[tools] approve`` list may name (``tether.tools.coding.catalog``)."""
DEFAULT_APPROVE: Final = default_approvals()
"""The tools asked about before they run, unless the config says otherwise: the coding tools
whose declared effects include a write, an execution or the network."""


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
