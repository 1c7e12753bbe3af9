"""Package namespaces whose names load their modules on first use.

A package whose ``__init__`` imported every module would make reading one light module of it
(a catalog of names, a config's constants) pay for all the others. ``lazy_exports`` gives
such a package its ``__getattr__`` and ``__dir__``: ``from package import Name`` imports the
module that defines ``Name`` then, and keeps the value in the package's namespace. Type
checkers read the package's ``if TYPE_CHECKING:`` imports of the same names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, modules: Mapping[str, tuple[str, ...]], namespace: MutableMapping[str, object]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``), whose submodule
    ``modules[m]`` defines the names listed for it; ``namespace`` is the package's
    ``globals()``."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
