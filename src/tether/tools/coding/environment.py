"""The environment of tool processes: the user's, without the variables that hold API keys.

A model that can run a command could otherwise read the key tether uses to call it
(``echo $OPENAI_API_KEY``) into its own transcript, the session file and the next request.
So ``bash`` and ``python_process`` start with ``os.environ`` as it is at that moment minus
every *key variable*: each catalog preset's ``api_key_env`` (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY``, ``OPENROUTER_API_KEY``, ``GROQ_API_KEY``, ``DEEPSEEK_API_KEY``,
``MISTRAL_API_KEY``; ``tether.providers.catalog.PRESETS``) and the names given in ``hide``
(the command line adds the active model's ``api_key_env`` and every custom provider's).
A name in ``pass_through`` is kept anyway: a deliberate choice (``[tools] pass_env`` in the
config file).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Final, cast

from tether._base.dataclass import dataclass
from tether._base.strings import LazyPattern

__all__ = ["ProcessEnvironment", "catalog_key_variables", "process_environment"]

_NAME: Final = LazyPattern(r"[A-Za-z_][A-Za-z0-9_]*")


def catalog_key_variables() -> frozenset[str]:
    """Every catalog preset's ``api_key_env`` (read when first needed: the catalog is not
    imported before a process starts)."""
    from tether.providers.catalog import PRESETS

    return frozenset(p.api_key_env for p in PRESETS.values() if p.api_key_env is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessEnvironment:
    """Which variables a tool process does not get (``hide``, on top of the catalog's key
    variables) and which it gets anyway (``pass_through``)."""

    hide: frozenset[str] = frozenset()
    pass_through: frozenset[str] = frozenset()

    def build(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for one process: ``environ`` (default ``os.environ``, read now)
        without the hidden variables."""
        source = os.environ if environ is None else environ
        hidden = (catalog_key_variables() | self.hide) - self.pass_through
        return {name: value for name, value in source.items() if name not in hidden}


def _names(value: object, parameter: str, factory: str) -> frozenset[str]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(
            f"{factory}({parameter}=...): {parameter} must be a collection of environment "
            f"variable names (a list or tuple), not {type(value).__name__}"
        )
    names = tuple(cast("Iterable[object]", value))
    for name in names:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise TypeError(
                f"{factory}({parameter}=...): {parameter} holds something that is not an "
                "environment variable name (letters, digits and '_')"
            )
    return frozenset(cast("frozenset[str]", frozenset(names)))


def process_environment(hide_env: object, pass_env: object, factory: str) -> ProcessEnvironment:
    """The checked ``ProcessEnvironment`` of a factory's ``hide_env`` and ``pass_env``
    arguments (``TypeError`` naming the parameter for anything but names)."""
    return ProcessEnvironment(
        hide=_names(hide_env, "hide_env", factory),
        pass_through=_names(pass_env, "pass_env", factory),
    )
