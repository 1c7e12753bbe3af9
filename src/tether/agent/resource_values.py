"""The values of checkpoint 12 resources (``tether.agent.resources``, which re-exports them):
the limits, the error and its stable codes, root definitions and roots, a loaded text and a
listed entry."""

from __future__ import annotations

import os
from typing import Final, Literal, TypeAlias, get_args

from tether._base.dataclass import dataclass
from tether._base.tether_error import TetherError

__all__ = [
    "MAX_DIRECTORY_ENTRIES",
    "MAX_RESOURCE_TEXT_BYTES",
    "RESOURCE_ERROR_CODES",
    "ResourceEntry",
    "ResourceEntryKind",
    "ResourceError",
    "ResourceErrorCode",
    "ResourceRoot",
    "ResourceRootDefinition",
    "TextResource",
]
MAX_RESOURCE_TEXT_BYTES: Final = 1_048_576
"""The largest resource ``load_text`` reads, in encoded bytes (1 MiB)."""

MAX_DIRECTORY_ENTRIES: Final = 4_096
"""The most entries ``list_directory`` reads from one directory of one root."""

ResourceErrorCode: TypeAlias = Literal[
    "RESOURCE_INVALID_ROOTS",
    "DUPLICATE_RESOURCE_ROOT_ID",
    "RESOURCE_OUTSIDE_TRUSTED_ROOTS",
    "RESOURCE_ROOT_CHANGED",
    "RESOURCE_NOT_FILE",
    "RESOURCE_TOO_LARGE",
    "RESOURCE_INVALID_UTF8",
    "RESOURCE_IO_FAILED",
]
"""The stable codes of ``ResourceError``."""

RESOURCE_ERROR_CODES: Final[tuple[ResourceErrorCode, ...]] = get_args(ResourceErrorCode)
"""Every ``ResourceErrorCode``, in declaration order."""

ResourceEntryKind = Literal["file", "directory"]
"""What a ``ResourceEntry`` names."""


class ResourceError(TetherError[ResourceErrorCode]):
    """A resource operation failed; ``code`` is one of ``RESOURCE_ERROR_CODES``."""

    def __init__(self, code: ResourceErrorCode, message: str) -> None:
        super().__init__(code, message)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceRootDefinition:
    """One root to trust: a stable ``id`` and the ``directory`` as configured."""

    id: str
    directory: str | os.PathLike[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceRoot:
    """A trusted root as the loader holds it: ``directory`` is the canonical (real) path."""

    id: str
    directory: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextResource:
    """A loaded text file: the root it came from, its normalized ``/``-joined path, its text."""

    root_id: str
    path: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceEntry:
    """One name of a directory listing: the root that supplied it, its normalized path."""

    root_id: str
    path: str
    kind: ResourceEntryKind
