"""Extensions from installed packages: ``importlib.metadata`` entry points.

A package advertises an extension in its ``pyproject.toml``::

    [project.entry-points."tether.extensions"]
    hello = "tether_hello:extension"

The object an entry point names is either an ``ExtensionDefinition`` (used as it is) or a
zero-argument factory (a function or a class), which becomes
``ExtensionDefinition(id=<entry point name>, create=factory)``. Nothing is imported until
``load_entry_point_extensions`` is called: importing tether never loads an extension, and
loading one never activates it (give the definitions to ``ExtensionHost.discover``).

``EXTENSION_LOAD_FAILED`` is tether's own code (the workshop has no entry points): an entry
point whose import fails (``SystemExit`` included: an extension must not end its host as it
is imported) or that names neither a definition nor a zero-argument factory, or a name that
several distributions provide. The message names the entry point and its
distribution; the original error is the ``__cause__``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from tether._base.exact_types import exactly, is_array, type_of
from tether.agent.extensions.errors import ExtensionError
from tether.agent.extensions.values import ExtensionDefinition, untyped_definition

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "load_entry_point_extensions"]

ENTRY_POINT_GROUP: Final = "tether.extensions"
"""The entry-point group tether reads extensions from."""


def load_entry_point_extensions(
    names: Sequence[str] | None = None, *, group: str = ENTRY_POINT_GROUP
) -> tuple[ExtensionDefinition, ...]:
    """Load the extension definitions that installed distributions advertise in ``group``.

    ``names=None`` loads every entry point of the group, sorted by name; otherwise exactly
    the named ones, in the order given. Raises ``ExtensionError``:
    ``EXTENSION_INVALID_OPTIONS`` for ``names`` that is not a list or tuple of distinct
    strings (a bare ``str`` included) or a ``group`` that is not a non-empty string,
    ``EXTENSION_NOT_FOUND`` for a name no distribution provides, and
    ``EXTENSION_LOAD_FAILED`` (see the module docstring).
    """
    if type_of(group) is not str or not group:
        raise ExtensionError("EXTENSION_INVALID_OPTIONS", "Entry point group must be a string")
    wanted = _names(names)
    from importlib.metadata import entry_points

    by_name: dict[str, list[EntryPoint]] = {}
    for entry_point in entry_points(group=group):
        by_name.setdefault(entry_point.name, []).append(entry_point)
    if wanted is None:
        wanted = tuple(sorted(by_name))
    definitions: list[ExtensionDefinition] = []
    for name in wanted:
        found = by_name.get(name)
        if found is None:
            raise ExtensionError(
                "EXTENSION_NOT_FOUND", f'No entry point named "{name}" in group "{group}"'
            )
        if len(found) > 1:
            providers = ", ".join(sorted(_distribution(entry_point) for entry_point in found))
            raise ExtensionError(
                "EXTENSION_LOAD_FAILED",
                f'Extension entry point "{name}" in group "{group}" is provided by several '
                f"distributions: {providers}",
            )
        definitions.append(_load(found[0]))
    return tuple(definitions)


def _names(names: object) -> tuple[str, ...] | None:
    if names is None:
        return None
    if not is_array(names):
        raise ExtensionError(
            "EXTENSION_INVALID_OPTIONS", "Entry point names must be a list or tuple of strings"
        )
    wanted: list[str] = []
    for name in tuple(names):
        if not exactly(name, str) or not name:
            raise ExtensionError(
                "EXTENSION_INVALID_OPTIONS", "Entry point names must be non-empty strings"
            )
        wanted.append(name)
    if len(set(wanted)) != len(wanted):
        raise ExtensionError("EXTENSION_INVALID_OPTIONS", "Entry point names must be distinct")
    return tuple(wanted)


def _distribution(entry_point: EntryPoint) -> str:
    dist = entry_point.dist
    if dist is None:
        return "an unknown distribution"
    return f'distribution "{dist.name} {dist.version}"'


def _load(entry_point: EntryPoint) -> ExtensionDefinition:
    where = (
        f'Extension entry point "{entry_point.name}" ({entry_point.value}) '
        f"from {_distribution(entry_point)}"
    )
    try:
        loaded: object = entry_point.load()
    except (Exception, SystemExit) as error:  # an import that exits is a failure too
        raise ExtensionError(
            "EXTENSION_LOAD_FAILED",
            f"{where} failed to load: {type(error).__name__}: {error}",
        ) from error
    if exactly(loaded, ExtensionDefinition):
        return loaded
    if not callable(loaded) or not _takes_no_arguments(loaded):
        raise ExtensionError(
            "EXTENSION_LOAD_FAILED",
            f"{where} is neither an ExtensionDefinition nor a zero-argument factory "
            f"(got {type_of(loaded).__name__})",
        )
    try:
        return untyped_definition(entry_point.name, loaded)
    except ExtensionError as error:
        raise ExtensionError("EXTENSION_LOAD_FAILED", f"{where}: {error}") from error


def _takes_no_arguments(factory: Callable[..., object]) -> bool:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return True  # no signature to read (some builtins): let the call decide
    try:
        signature.bind()
    except TypeError:
        return False
    return True
