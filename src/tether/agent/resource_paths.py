"""The path grammar of checkpoint 12 resources, the same on every host OS: a relative
``/``-separated path, each segment checked (no ``.``/``..``, no reserved or ambiguous name),
else ``RESOURCE_OUTSIDE_TRUSTED_ROOTS`` (``tether.agent.resources`` re-exports
``normalize_resource_path``)."""

from __future__ import annotations

from typing import Final, NoReturn

from tether.agent.resource_values import ResourceError

__all__ = ["normalize_resource_path", "outside", "path_segments", "valid_name"]
_RESERVED_NAMES: Final = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{digit}" for digit in range(1, 10)}
    | {f"lpt{digit}" for digit in range(1, 10)}
)


def outside(message: str) -> NoReturn:
    """Raise ``RESOURCE_OUTSIDE_TRUSTED_ROOTS`` with ``message``."""
    raise ResourceError("RESOURCE_OUTSIDE_TRUSTED_ROOTS", message)


def path_segments(path: object) -> tuple[str, ...]:
    """The checked segments of a resource path (see the module docstring)."""
    if type(path) is not str or not path:
        outside("Resource path must be a non-empty string")
    if "\0" in path:
        outside("Resource path must not contain NUL")
    text = path.replace("\\", "/")
    if text.startswith("/"):
        outside("Resource path must be relative")
    if ":" in text:
        outside("Resource path must not contain ':'")
    stack: list[str] = []
    for segment in text.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not stack:
                outside("Resource path climbs above its root")
            stack.pop()
            continue
        _check_segment(segment)
        stack.append(segment)
    if not stack:
        outside("Resource path names no file")
    return tuple(stack)


def _check_segment(segment: str) -> None:
    if segment.endswith((".", " ")):
        outside("Resource path segment must not end in '.' or a space")
    if segment.split(".", 1)[0].lower() in _RESERVED_NAMES:
        outside("Resource path segment is a reserved device name")


def valid_name(name: str) -> bool:
    """Whether a directory entry's name is one segment the grammar accepts unchanged.

    A name that is not strict UTF-8 (``os.scandir`` gives undecodable bytes as lone
    surrogates) is refused, so no such string ever reaches a path or a message."""
    if not name or name in (".", "..") or any(char in name for char in "\0/\\:"):
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    try:
        _check_segment(name)
    except ResourceError:
        return False
    return True


def normalize_resource_path(path: str) -> str:
    """The normalized ``/``-joined form of a resource path, or ``ResourceError``
    (``RESOURCE_OUTSIDE_TRUSTED_ROOTS``) when the grammar rejects it.

    ``\\`` counts as ``/``; empty and ``.`` segments are dropped; ``..`` removes the previous
    segment and may never climb above the root. Rejected: a non-string or empty path, NUL, a
    leading ``/``, ``:`` anywhere (so every drive prefix), a segment ending in ``.`` or a
    space, a Windows reserved device name (``CON PRN AUX NUL COM1-9 LPT1-9``, the part before
    the first dot, any case), and a path that normalizes to nothing. The rules are the same on
    every host OS. ``nested/../instructions.md`` becomes ``instructions.md``.
    """
    return "/".join(path_segments(path))
