"""The provider registry: one ``ApiSpec`` per wire API, from which everything else derives.

An ``ApiSpec`` says what tether needs to know about one wire API (``openai-chat``,
``anthropic-messages``): its ``name`` (the ``api`` of a preset and of a config file's
``[providers.NAME]``), how to load its ``Model`` class (on first use: the HTTP providers
import httpx2), the constructor arguments it adds for a catalog preset or for a server of the
config file, the shape of its base URL, and its catalog presets. The catalog
(``tether.providers.catalog.PRESETS``, ``parse_model_spec``, ``model_from_spec``), the
config file's ``api = ...`` check, the CLI's model building and ``tether models`` all read
``REGISTRY``; none of them names an API.

Adding a wire API is one module that defines its ``ApiSpec`` as ``API_SPEC`` (see
``tether.providers.openai_chat_api``) and one line naming that module in ``BUILT_IN_APIS``.
Tests add one of their own with ``REGISTRY.registered(spec)`` (removed again when the
``with`` block ends).

Importing this module loads no HTTP provider: only this module and the (pure) spec modules.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from tether._base.dataclass import dataclass
from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty
from tether.providers.openai_compat import OpenAIChatCompat

if TYPE_CHECKING:
    from typing import Protocol

    from tether.abort import AbortSignal
    from tether.models.base import Model

    class ProviderModel(Model, Protocol):
        """What an API's model class builds: a ``Model`` that can list its server's models
        and owns resources to close."""

        async def list_models(self, signal: AbortSignal | None = None) -> tuple[str, ...]: ...

        async def aclose(self) -> None: ...


__all__ = ["BUILT_IN_APIS", "REGISTRY", "ApiRegistry", "ApiSpec", "ProviderApi", "ProviderPreset"]

ProviderApi: TypeAlias = str
"""The wire API a provider speaks: the ``name`` of an ``ApiSpec`` in ``REGISTRY``
(``"openai-chat"``, ``"anthropic-messages"``), which picks the ``Model`` class for it."""

_API_NAME: Final = re.compile(r"[a-z0-9][a-z0-9-]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderPreset:
    """One server: ``name`` (the ``PROVIDER`` of a model spec), ``base_url`` (without the
    ``/chat/completions`` or ``/v1/messages`` path), ``api_key_env`` (the environment variable
    holding the key; ``None`` when the server needs none), the ``api`` it speaks (an
    ``ApiSpec`` name) and, for OpenAI-compatible servers, its ``compat`` quirks."""

    name: str
    base_url: str
    api_key_env: str | None
    compat: OpenAIChatCompat = field(default_factory=OpenAIChatCompat)
    api: ProviderApi = "openai-chat"

    def __post_init__(self) -> None:
        if not is_non_empty(self.name) or "/" in self.name:
            raise ValueError("ProviderPreset.name must be a non-empty name without '/'")
        if type_of(self.base_url) is not str or not self.base_url.startswith(
            ("http://", "https://")
        ):
            raise ValueError("ProviderPreset.base_url must be an http:// or https:// URL")
        if self.api_key_env is not None and not is_non_empty(self.api_key_env):
            raise ValueError("ProviderPreset.api_key_env must be a variable name or None")
        if type_of(self.compat) is not OpenAIChatCompat:
            raise TypeError("ProviderPreset.compat must be an OpenAIChatCompat")
        if type_of(self.api) is not str or not _API_NAME.fullmatch(self.api):
            raise ValueError("ProviderPreset.api must be an API name such as 'openai-chat'")


def _no_options(preset: ProviderPreset | None) -> Mapping[str, object]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiSpec:
    """One wire API.

    * ``name``: what presets and ``[providers.NAME] api = ...`` call it (lowercase, ``-``);
    * ``summary``: one line for people (``"OpenAI Chat Completions"``);
    * ``load_model``: returns the ``Model`` class (or any callable taking the model name and
      keyword arguments); it imports the class, so nothing heavy loads before a model is
      built;
    * ``preset_options``: the constructor keyword arguments the API adds for a catalog preset,
      or for a ``[providers.NAME]`` server of the config file (``None``), such as
      OpenAI-compatible quirks; every model gets ``base_url`` and ``api_key_env`` besides, and
      ``max_output_tokens`` when the config sets it;
    * ``base_url_example``: a base URL in the shape the API expects (``/v1`` included or
      not), shown when a config file's server lacks one;
    * ``presets``: its catalog presets, each with ``api=name``;
    * ``cache_key_option``: the constructor keyword argument that takes a stable key per
      session for the server's prompt cache (``prompt_cache_key`` for OpenAI Chat), or
      ``None`` when the API has none (Anthropic's caching needs no key).
    """

    name: ProviderApi
    summary: str
    load_model: Callable[[], Callable[..., ProviderModel]]
    base_url_example: str
    presets: tuple[ProviderPreset, ...] = ()
    preset_options: Callable[[ProviderPreset | None], Mapping[str, object]] = _no_options
    cache_key_option: str | None = None

    def __post_init__(self) -> None:
        if type_of(self.name) is not str or not _API_NAME.fullmatch(self.name):
            raise ValueError("ApiSpec.name must be lowercase letters, digits and '-'")
        for preset in self.presets:
            if type_of(preset) is not ProviderPreset or preset.api != self.name:
                raise ValueError(f"ApiSpec {self.name!r}: every preset must have api={self.name!r}")

    def build(
        self, model: str, preset: ProviderPreset | None, options: Mapping[str, Any]
    ) -> ProviderModel:
        """A new model named ``model`` for ``preset`` (``None``: a config file's server):
        ``preset_options`` first, ``options`` (the constructor's keyword arguments) win."""
        return self.load_model()(model, **{**self.preset_options(preset), **options})


class ApiRegistry:
    """The known wire APIs, by name, in registration order, and their presets.

    ``register`` and ``unregister`` change it; ``registered`` is a context manager for tests.
    A registry made with ``built_in`` loads those specs on first use.
    """

    __slots__ = ("_apis", "_built_in", "_presets")

    def __init__(self, built_in: Callable[[], tuple[ApiSpec, ...]] | None = None) -> None:
        self._built_in = built_in
        self._apis: dict[str, ApiSpec] = {}
        self._presets: dict[str, ProviderPreset] = {}

    def _loaded(self) -> None:
        built_in, self._built_in = self._built_in, None
        if built_in is not None:
            for spec in built_in():
                self.register(spec)

    def register(self, spec: ApiSpec) -> None:
        """Add ``spec`` and its presets. ``ValueError`` when its name or a preset's name is
        taken."""
        self._loaded()
        if type_of(spec) is not ApiSpec:
            raise TypeError("register() takes an ApiSpec")
        if spec.name in self._apis:
            raise ValueError(f"API {spec.name!r} is registered already")
        taken = [preset.name for preset in spec.presets if preset.name in self._presets]
        if taken:
            raise ValueError(f"provider {taken[0]!r} is registered already")
        self._apis[spec.name] = spec
        self._presets.update((preset.name, preset) for preset in spec.presets)

    def unregister(self, name: ProviderApi) -> None:
        """Remove the API ``name`` and its presets (``KeyError`` when it is unknown)."""
        self._loaded()
        spec = self._apis.pop(name)
        for preset in spec.presets:
            del self._presets[preset.name]

    @contextlib.contextmanager
    def registered(self, spec: ApiSpec) -> Generator[ApiSpec]:
        """``spec`` registered inside the ``with`` block only."""
        self.register(spec)
        try:
            yield spec
        finally:
            self.unregister(spec.name)

    def names(self) -> tuple[ProviderApi, ...]:
        """The API names, in registration order."""
        self._loaded()
        return tuple(self._apis)

    def get(self, name: str) -> ApiSpec | None:
        """The spec called ``name``, or ``None``."""
        self._loaded()
        return self._apis.get(name)

    def api(self, name: ProviderApi) -> ApiSpec:
        """The spec called ``name``; ``ValueError`` naming the known APIs otherwise."""
        spec = self.get(name)
        if spec is None:
            raise ValueError(f"unknown API {name!r}; known APIs: {', '.join(self.names())}")
        return spec

    def presets(self) -> Mapping[str, ProviderPreset]:
        """Every registered preset by name (read-only, and live: it follows ``register``)."""
        self._loaded()
        return MappingProxyType(self._presets)


class _PresetView(Mapping[str, ProviderPreset]):
    """``REGISTRY``'s presets as a read-only mapping that loads the registry on first use."""

    __slots__ = ("_registry",)

    def __init__(self, registry: ApiRegistry) -> None:
        self._registry = registry

    def __getitem__(self, name: str) -> ProviderPreset:
        return self._registry.presets()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry.presets())

    def __len__(self) -> int:
        return len(self._registry.presets())

    def __repr__(self) -> str:
        return f"PRESETS({dict(self._registry.presets())!r})"


BUILT_IN_APIS: Final = (
    "tether.providers.anthropic_api",
    "tether.providers.openai_chat_api",
    "tether.providers.openai_responses_api",
    "tether.providers.gemini_api",
)
"""The modules of the built-in wire APIs, one line each, in catalog (and ``tether models``)
order; each defines its ``ApiSpec`` as ``API_SPEC``."""


def _built_in() -> tuple[ApiSpec, ...]:
    import importlib

    specs: list[ApiSpec] = []
    for name in BUILT_IN_APIS:
        spec: object = getattr(importlib.import_module(name), "API_SPEC", None)
        if type_of(spec) is not ApiSpec:
            raise TypeError(f"{name}.API_SPEC must be an ApiSpec")
        specs.append(cast("ApiSpec", spec))
    return tuple(specs)


REGISTRY: Final = ApiRegistry(_built_in)
"""The registry tether uses: the built-in APIs, loaded on first use."""

PRESET_VIEW: Final[Mapping[str, ProviderPreset]] = _PresetView(REGISTRY)
"""``REGISTRY``'s presets by name (``tether.providers.catalog.PRESETS``)."""
