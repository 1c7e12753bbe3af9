"""Model selection for every ``tether`` command, the errors a person can act on, ``tether models``.

``--model PROVIDER/MODEL`` names a provider (a catalog preset such as ``openai``,
``anthropic``, ``ollama``, or a ``[providers.NAME]`` of the config file) and the vendor's
model name (everything after the first ``/``). ``--base-url URL`` points that provider
elsewhere, in the shape of its API's ``ApiSpec.base_url_example`` (for
``anthropic-messages`` providers the URL has no ``/v1``: the model adds ``/v1/messages``; for
OpenAI-compatible ones it does, as in ``http://localhost:8000/v1``). The providers, their
APIs and the model classes come from ``tether.providers.registry``.
Without ``--model`` the config's ``default_model`` is used where a command needs a model.

``choose_model`` checks everything that can be checked before the first request and raises
``CliError`` (exit status 2) with a stable code:

* ``CLI_INVALID_MODEL_SPEC``: not ``PROVIDER/MODEL``;
* ``CLI_UNKNOWN_PROVIDER``: the message lists the known providers;
* ``CLI_MISSING_API_KEY``: the provider's key variable is unset or empty; the message names
  the variable (never a value);
* ``CLI_NO_MODEL``: no ``--model`` and no ``default_model``.

What goes wrong at run time arrives as a failed run whose message starts with a
``ProviderError`` code (``tether.providers.errors``). ``run_problem`` is the one place that
turns those codes into advice (also exit status 2):

* ``CLI_SERVER_UNREACHABLE`` (no connection, or connecting timed out): names the URL;
* ``CLI_AUTH_FAILED`` (HTTP 401/403): names the key variable to check;
* ``CLI_RATE_LIMITED`` (HTTP 429): says how long the server asked to wait, when it did;
* ``CLI_CONTEXT_OVERFLOW``: suggests ``/compact`` (in ``tether chat``) or a shorter prompt.

Any other failure is reported by the run itself (exit status 1). Keys are read from the
environment by the model objects; this module only asks whether a variable is set. URLs are
shown without their ``user:password@`` part, query values or fragment
(``tether.cli.urls.display_url``).

``tether models`` (``models_command``) lists the providers (presets, then the config's), each
with its API, base URL, key variable and whether it is set, the configured model settings,
the models tether knows (the catalog's, then the configured ones it does not know) with their
context window, output limit, prices in US dollars per million tokens (the config's over the
catalog's; ``?``/``null``: not known) and what they can read and do, and the default model;
``--json`` writes one JSON object per line instead (``type``: ``provider``, ``model``,
``catalogModel``, ``default``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Final, Literal, cast

from tether._base.dataclass import dataclass
from tether.cli.config import CliConfig, CliError, ModelSettings
from tether.cli.render import Output, json_line, warn
from tether.cli.urls import display_url
from tether.providers.registry import REGISTRY, ProviderApi

if TYPE_CHECKING:
    from tether.protocol import ModelUsage, RunResult
    from tether.providers.errors import ProviderError
    from tether.providers.model_catalog import ModelInfo, ModelPrices
    from tether.providers.registry import ProviderModel
    from tether.providers.thinking import ThinkingLevel

__all__ = [
    "ModelChoice",
    "Provider",
    "choose_model",
    "display_url",
    "known_providers",
    "models_command",
    "run_problem",
]

_PROVIDER_CODE: Final = re.compile(r"(PROVIDER_[A-Z_]+): ")


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """A provider a model spec can name: a catalog preset (``source="preset"``) or a custom
    server of the config file (``source="config"``)."""

    name: str
    base_url: str
    api_key_env: str | None
    api: ProviderApi
    source: Literal["preset", "config"]


def known_providers(config: CliConfig) -> dict[str, Provider]:
    """Every provider by name: the catalog presets in catalog order, then the config's."""
    providers = {
        name: Provider(
            name=name,
            base_url=preset.base_url,
            api_key_env=preset.api_key_env,
            api=preset.api,
            source="preset",
        )
        for name, preset in REGISTRY.presets().items()
    }
    for name, custom in config.providers.items():
        providers[name] = Provider(
            name=name,
            base_url=custom.base_url,
            api_key_env=custom.api_key_env,
            api=custom.api,
            source="config",
        )
    return providers


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """A checked model selection: ``spec`` as given (``"openai/gpt-4o-mini"``), its
    ``provider``, the vendor's ``model`` name, the ``base_url`` requests go to and the
    config's ``settings`` for the spec. The coding tools built for it hide ``hidden_env``
    from their processes (every known provider's key variable, this one's included) except
    ``pass_env`` (the config's ``[tools] pass_env``)."""

    spec: str
    provider: Provider
    model: str
    base_url: str
    settings: ModelSettings = field(default_factory=ModelSettings)
    hidden_env: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()

    thinking: ThinkingLevel | None = None
    """The thinking level the model is built with: the config's for this model, else its
    top-level ``thinking`` (``--thinking`` is written into both; ``None``: the model's
    default)."""

    @property
    def info(self) -> ModelInfo | None:
        """The model catalog's entry for this spec (``tether.providers.model_catalog``;
        ``None``: the catalog does not know the model)."""
        from tether.providers.model_catalog import model_info

        return model_info(self.spec)

    @property
    def context_window(self) -> int | None:
        """The config's ``context_window`` for this model, else the catalog's (``None``:
        neither knows it)."""
        window = self.settings.context_window
        if window is None:
            info = self.info
            window = None if info is None else info.context_window
        return window

    @property
    def prices(self) -> ModelPrices:
        """The model's prices: each the config's when it sets one, else the catalog's."""
        info = self.info
        return self.settings.prices.over(None if info is None else info.prices)

    def cost(self, usage: ModelUsage) -> float | None:
        """What ``usage`` costs, in US dollars, at ``prices``
        (``tether.providers.model_catalog.cost_of``: each kind of token at its own price);
        ``None`` when a kind of token it spent has no price."""
        from tether.providers.model_catalog import cost_of

        cost = cost_of(usage, self.prices)
        return None if cost is None else cost.total

    def build(self, *, cache_key: str | None = None) -> ProviderModel:
        """A new ``Model`` for this choice, of the class of the provider's API
        (``tether.providers.registry``); it reads its key from the provider's variable and
        owns an HTTP client (close it with ``await model.aclose()``). ``cache_key`` (a
        session's stable key, no secret) goes to the API's ``cache_key_option`` when it has
        one (OpenAI's ``prompt_cache_key``)."""
        provider = self.provider
        options: dict[str, object] = {
            "base_url": self.base_url,
            "api_key_env": provider.api_key_env,
        }
        if self.settings.max_output_tokens is not None:
            options["max_output_tokens"] = self.settings.max_output_tokens
        if self.thinking is not None:
            options["thinking"] = self.thinking
        spec = REGISTRY.api(provider.api)
        if cache_key is not None and spec.cache_key_option is not None:
            options[spec.cache_key_option] = cache_key
        preset = REGISTRY.presets()[provider.name] if provider.source == "preset" else None
        return spec.build(self.model, preset, options)


def choose_model(
    spec: str | None,
    *,
    base_url: str | None,
    config: CliConfig,
    environ: Mapping[str, str] | None = None,
) -> ModelChoice:
    """The model ``spec`` names (``None``: the config's ``default_model``), pointed at
    ``base_url`` when given. Raises ``CliError`` (see the module docstring)."""
    env = os.environ if environ is None else environ
    if spec is None:
        spec = config.default_model
        if spec is None:
            raise CliError(
                "CLI_NO_MODEL",
                f"no model: pass --model PROVIDER/MODEL or set default_model in {config.path}",
            )
    providers = known_providers(config)
    known = ", ".join(sorted(providers))
    name, slash, model = spec.partition("/")
    if not slash or not name or not model.strip():
        raise CliError(
            "CLI_INVALID_MODEL_SPEC",
            f"--model must be PROVIDER/MODEL, e.g. openai/gpt-4o-mini; known providers: {known}",
        )
    provider = providers.get(name)
    if provider is None:
        raise CliError(
            "CLI_UNKNOWN_PROVIDER",
            f"unknown provider {name!r}; known providers: {known} "
            f"(add your own as [providers.NAME] in {config.path})",
        )
    variable = provider.api_key_env
    if variable is not None and not env.get(variable):
        raise CliError(
            "CLI_MISSING_API_KEY",
            f"no API key for provider {name!r}: set the environment variable {variable}",
        )
    settings = config.models.get(spec, ModelSettings())
    return ModelChoice(
        spec=spec,
        provider=provider,
        model=model,
        base_url=provider.base_url if base_url is None else base_url,
        settings=settings,
        thinking=settings.thinking or config.thinking,
        hidden_env=tuple(sorted({p.api_key_env for p in providers.values() if p.api_key_env})),
        pass_env=config.tools.pass_env,
    )


def run_problem(
    result: RunResult, error: ProviderError | None, choice: ModelChoice
) -> CliError | None:
    """The advice for a failed run whose failure a person can act on, else ``None``.

    ``error`` is the last ``ProviderError`` the model raised (for ``retry_after`` and the
    status); the code is taken from the run's message (``"PROVIDER_AUTH_FAILED: HTTP 401:
    ..."``), which names the failure that ended the run.
    """
    if result.status != "failed":
        return None
    message = result.error.message
    match = _PROVIDER_CODE.match(message)
    if match is None:
        return None
    code = match.group(1)
    if error is not None and error.code != code:
        error = None
    return _advice(code, message, error, choice)


def provider_problem(error: ProviderError, choice: ModelChoice) -> CliError | None:
    """The advice for a ``ProviderError`` a person can act on (as ``run_problem``), else
    ``None``."""
    return _advice(error.code, error.message, error, choice)


def _advice(
    code: str, message: str, error: ProviderError | None, choice: ModelChoice
) -> CliError | None:
    url = display_url(choice.base_url)
    provider = choice.provider
    if code == "PROVIDER_CONNECTION_FAILED" or (
        code == "PROVIDER_TIMEOUT" and "Connecting timed out" in message
    ):
        return CliError(
            "CLI_SERVER_UNREACHABLE",
            f"cannot reach {url} (provider {provider.name!r}): is the server running? "
            "(--base-url points the provider elsewhere)",
        )
    if code == "PROVIDER_AUTH_FAILED":
        status = error.status if error is not None and error.status is not None else 401
        variable = provider.api_key_env
        if variable is None:
            advice = (
                f"provider {provider.name!r} sends no API key; give it one with a custom "
                "[providers.NAME] entry that sets api_key_env"
            )
        else:
            advice = f"check the API key in {variable}"
            if status == 403:
                advice += f" (it may not have access to {choice.model!r})"
        return CliError("CLI_AUTH_FAILED", f"{url} refused the request (HTTP {status}): {advice}")
    if code == "PROVIDER_RATE_LIMITED":
        delay = None if error is None else error.retry_after
        wait = (
            "retry later (the server named no delay)"
            if delay is None
            else f"retry after {delay:g} s"
        )
        return CliError("CLI_RATE_LIMITED", f"rate limited by {url} (HTTP 429): {wait}")
    if code == "PROVIDER_CONTEXT_OVERFLOW":
        return CliError(
            "CLI_CONTEXT_OVERFLOW",
            f"the conversation is longer than the context window of {choice.spec}: "
            "use a shorter prompt, or /compact the conversation (in tether chat)",
        )
    return None


# --- tether models ----------------------------------------------------------------------------


def models_command(
    config: CliConfig, out: Output, *, as_json: bool, environ: Mapping[str, str] | None = None
) -> int:
    """Write what ``tether models`` lists (see the module docstring); returns 0."""
    env = os.environ if environ is None else environ
    providers = known_providers(config)
    rows: list[dict[str, object]] = []
    for provider in providers.values():
        variable = provider.api_key_env
        rows.append(
            {
                "type": "provider",
                "name": provider.name,
                "api": provider.api,
                "baseUrl": display_url(provider.base_url),
                "apiKeyEnv": variable,
                "keySet": None if variable is None else bool(env.get(variable)),
                "source": provider.source,
            }
        )
    for spec, settings in config.models.items():
        rows.append(
            {
                "type": "model",
                "spec": spec,
                "contextWindow": settings.context_window,
                "maxOutputTokens": settings.max_output_tokens,
            }
        )
    rows.extend(_catalog_rows(config))
    rows.append(
        {
            "type": "default",
            "model": config.default_model,
            "configPath": str(config.path),
            "configFound": config.found,
        }
    )
    if as_json:
        for row in rows:
            out.write(json_line(row))
        return 0
    _write_table(out, [row for row in rows if row["type"] == "provider"])
    models = [row for row in rows if row["type"] == "model"]
    if models:
        out.write("\nmodel settings:\n")
        for row in models:
            settings = [
                f"{label} {row[key]}"
                for label, key in (
                    ("context window", "contextWindow"),
                    ("max output tokens", "maxOutputTokens"),
                )
                if row[key] is not None
            ]
            out.write(f"  {row['spec']}: {', '.join(settings) or 'nothing set'}\n")
    _write_catalog(out, [row for row in rows if row["type"] == "catalogModel"])
    where = f"{config.path}" if config.found else f"{config.path} (not found: defaults)"
    default = config.default_model or "none (pass --model PROVIDER/MODEL)"
    out.write(f"\ndefault model: {default}\nconfig file: {where}\n")
    return 0


LISTING_MODEL: Final = "any"
"""The model name a listing's model object is built with (the listing names none)."""


async def remote_models_command(choice: ModelChoice, out: Output, *, as_json: bool) -> int:
    """``tether models PROVIDER``: the models the provider's server offers (``GET /models``),
    one per line (``--json``: one ``{"type": "model", "provider", "id"}`` object per line).
    Returns the exit status: 0, 2 with advice (an unreachable server, a refused key), 1 for
    any other failure of the server."""
    from tether.providers.errors import ProviderError

    model = choice.build()
    try:
        ids = await model.list_models()
    except ProviderError as error:
        problem = provider_problem(error, choice)
        if problem is not None:
            warn(f"tether models: [{problem.code}] {problem}")
            return 2
        warn(f"tether models: [{error.code}] {error.message} ({display_url(choice.base_url)})")
        return 1
    finally:
        await model.aclose()
    name = choice.provider.name
    if as_json:
        for ident in ids:
            out.write(json_line({"type": "model", "provider": name, "id": ident}))
        return 0
    out.write(f"models at {display_url(choice.base_url)} (provider {name}):\n")
    for ident in ids:
        out.write(f"  {name}/{ident}\n")
    if not ids:
        out.write("  (none)\n")
    return 0


def _catalog_rows(config: CliConfig) -> list[dict[str, object]]:
    """One ``catalogModel`` row per model tether knows: the catalog's in catalog order, then
    the config's it does not know; the config's settings over the catalog's, one by one."""
    from tether.providers.model_catalog import MODEL_CATALOG, ModelInfo

    specs = [*MODEL_CATALOG, *(spec for spec in config.models if spec not in MODEL_CATALOG)]
    rows: list[dict[str, object]] = []
    for spec in specs:
        info = MODEL_CATALOG.get(spec)
        settings = config.models.get(spec)
        base = info or ModelInfo()
        prices = base.prices if settings is None else settings.prices.over(base.prices)
        context = None if settings is None else settings.context_window
        output = None if settings is None else settings.max_output_tokens
        source = "config" if info is None else "catalog" if settings is None else "catalog+config"
        rows.append(
            {
                "type": "catalogModel",
                "spec": spec,
                "contextWindow": base.context_window if context is None else context,
                "maxOutputTokens": base.max_output_tokens if output is None else output,
                "prices": {
                    "input": prices.input,
                    "output": prices.output,
                    "cacheRead": prices.cache_read,
                    "cacheWrite": prices.cache_write,
                },
                "images": base.images,
                "thinking": base.thinking,
                "source": source,
            }
        )
    return rows


def _tokens(value: object) -> str:
    """``200000`` → ``200k``; ``None`` → ``?``."""
    if not isinstance(value, int):
        return "?"
    return f"{round(value / 1000)}k" if value >= 1000 else str(value)


def _usd(value: object) -> str:
    """``3`` → ``$3``, ``0.3`` → ``$0.30``, ``0.025`` → ``$0.025``; ``None`` → ``?``."""
    if not isinstance(value, int | float):
        return "?"
    if value == int(value):
        return f"${int(value)}"
    text = f"{value:.2f}"
    return f"${text}" if float(text) == value else f"${value:g}"


def _write_catalog(out: Output, models: list[dict[str, object]]) -> None:
    out.write("\nmodels tether knows (USD per million tokens; ? = not known):\n")
    table: list[tuple[str, ...]] = [
        ("MODEL", "CONTEXT", "MAX OUT", "INPUT", "OUTPUT", "CACHE R", "CACHE W", "CAN")
    ]
    for row in models:
        prices = cast("dict[str, float | None]", row["prices"])
        can = [name for name in ("images", "thinking") if row[name]]
        table.append(
            (
                str(row["spec"]),
                _tokens(row["contextWindow"]),
                _tokens(row["maxOutputTokens"]),
                *(_usd(prices[key]) for key in ("input", "output", "cacheRead", "cacheWrite")),
                ",".join(can) or "-",
            )
        )
    _write_columns(out, table)


def _write_columns(out: Output, table: list[tuple[str, ...]]) -> None:
    """Every column but the last padded to its widest cell."""
    widths = [max(len(line[column]) for line in table) for column in range(len(table[0]) - 1)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        out.write("  ".join([*cells, line[-1]]).rstrip() + "\n")


def _write_table(out: Output, providers: list[dict[str, object]]) -> None:
    table = [("PROVIDER", "API", "BASE URL", "API KEY")]
    for row in providers:
        variable = row["apiKeyEnv"]
        if variable is None:
            key = "none needed"
        else:
            key = f"{variable} ({'set' if row['keySet'] else 'not set'})"
        name = str(row["name"]) + (" (config)" if row["source"] == "config" else "")
        table.append((name, str(row["api"]), str(row["baseUrl"]), key))
    _write_columns(out, table)
