"""The filesystem work of a ``tether.agent.resources.ResourceLoader``, run in its worker
thread: capturing the roots (canonical path and identity), reading one text (confined, opened
without following links, bounded, re-checked afterwards) and listing one directory over every
root (see ``tether.agent.resources``'s docstring for each check)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import Final

from tether._base.dataclass import dataclass
from tether.agent.resource_paths import outside, valid_name
from tether.agent.resource_values import (
    MAX_DIRECTORY_ENTRIES,
    MAX_RESOURCE_TEXT_BYTES,
    ResourceEntry,
    ResourceError,
    TextResource,
)

__all__ = ["CapturedRoot", "capture_roots", "list_directory_of", "load_text_from"]
# --- test seam ----------------------------------------------------------------------------------

_after_read: Callable[[str], None] | None = None
"""Test seam: when set, called (in the worker thread) with the canonical target path after a
file's bytes were read and before the open descriptor is re-checked, and with a directory's
canonical path after its names were read and before they are inspected, so a test can
replace either mid-operation. Production code never sets it."""


# --- filesystem helpers (run in the worker thread) ----------------------------------------------

_RootIdentity = tuple[int, int, object]
_FileIdentity = tuple[int, int, object, int, int]

_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_BINARY: Final = getattr(os, "O_BINARY", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_READ_FLAGS: Final = os.O_RDONLY | _O_CLOEXEC | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY
_MISSING: Final = frozenset({errno.ENOENT, errno.ENOTDIR})


def _birth(info: os.stat_result) -> object:
    birth: object = getattr(info, "st_birthtime_ns", None)
    if birth is None:  # pragma: no branch - per platform
        birth = getattr(info, "st_birthtime", None)
    return birth


def _root_identity(info: os.stat_result) -> _RootIdentity:
    return (info.st_dev, info.st_ino, _birth(info))


def _file_identity(info: os.stat_result) -> _FileIdentity:
    return (info.st_dev, info.st_ino, _birth(info), info.st_size, info.st_mtime_ns)


def _inside(root: str, target: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True, slots=True)
class CapturedRoot:
    """A root as ``capture_roots`` found it: its ``id``, the directory as configured, its
    canonical path and its identity (``(st_dev, st_ino, birth time)``)."""

    id: str
    configured: str
    canonical: str
    identity: _RootIdentity

    def verify(self) -> None:
        """The root is still the captured directory, else ``RESOURCE_ROOT_CHANGED``."""
        try:
            canonical = os.path.realpath(self.configured, strict=True)
            info = os.stat(canonical)
        except OSError:
            canonical, info = "", None
        if (
            info is None
            or canonical != self.canonical
            or not stat.S_ISDIR(info.st_mode)
            or _root_identity(info) != self.identity
        ):
            raise ResourceError(
                "RESOURCE_ROOT_CHANGED", f'Resource root "{self.id}" changed since it was loaded'
            )

    def lexical(self, segments: tuple[str, ...], shown: str) -> str:
        """The target path below the canonical root, before symlinks are resolved."""
        lexical = os.path.join(self.canonical, *segments)
        if not _inside(self.canonical, lexical):  # pragma: no cover - the grammar rules it out
            outside(f'Resource "{shown}" is outside the trusted roots')
        return lexical

    def resolve(self, segments: tuple[str, ...], shown: str) -> str | None:
        """The canonical target inside this root, or ``None`` when this root lacks it."""
        lexical = self.lexical(segments, shown)
        try:
            target = os.path.realpath(lexical, strict=True)
        except OSError as error:
            if error.errno in _MISSING:
                return None
            raise _io_failed(shown, error) from error
        if not _inside(self.canonical, target):
            outside(f'Resource "{shown}" is outside the trusted roots')
        return target


def _io_failed(shown: str, error: OSError) -> ResourceError:
    reason = error.strerror or type(error).__name__
    return ResourceError("RESOURCE_IO_FAILED", f'Could not read resource "{shown}": {reason}')


def _changed(shown: str) -> ResourceError:
    return ResourceError("RESOURCE_ROOT_CHANGED", f'Resource "{shown}" changed while it was read')


def _too_large(shown: str) -> ResourceError:
    return ResourceError(
        "RESOURCE_TOO_LARGE", f'Resource "{shown}" exceeds {MAX_RESOURCE_TEXT_BYTES} bytes'
    )


def capture_roots(definitions: tuple[tuple[str, str], ...]) -> tuple[CapturedRoot, ...]:
    """Each ``(id, directory)`` captured as a root (it must be a directory now)."""
    roots: list[CapturedRoot] = []
    for root_id, directory in definitions:
        configured = os.path.abspath(directory)
        try:
            canonical = os.path.realpath(configured, strict=True)
            info = os.stat(canonical)
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise ResourceError(
                "RESOURCE_IO_FAILED", f'Could not open resource root "{root_id}": {reason}'
            ) from error
        if not stat.S_ISDIR(info.st_mode):
            raise ResourceError(
                "RESOURCE_INVALID_ROOTS", f'Resource root "{root_id}" is not a directory'
            )
        roots.append(CapturedRoot(root_id, configured, canonical, _root_identity(info)))
    return tuple(roots)


def _read_bytes(target: str, shown: str) -> tuple[bytes, _FileIdentity]:
    """Open, check and read ``target``; the bytes and the identity fstat reported."""
    try:
        fd = os.open(target, _READ_FLAGS)
    except OSError as error:
        raise _io_failed(shown, error) from error
    failure: BaseException | None = None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise ResourceError("RESOURCE_NOT_FILE", f'Resource "{shown}" is not a regular file')
        if before.st_size > MAX_RESOURCE_TEXT_BYTES:
            raise _too_large(shown)
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        remaining = MAX_RESOURCE_TEXT_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > MAX_RESOURCE_TEXT_BYTES:
            raise _too_large(shown)
        if _after_read is not None:
            _after_read(target)
        identity = _file_identity(before)
        after = os.fstat(fd)
        if _file_identity(after) != identity or after.st_size != len(data):
            raise _changed(shown)
        return data, identity
    except ResourceError as error:
        failure = error
        raise
    except OSError as error:
        failure = error
        raise _io_failed(shown, error) from error
    finally:
        try:
            os.close(fd)
        except OSError as error:
            if failure is None:
                raise _io_failed(shown, error) from error


def _decode(data: bytes, shown: str) -> str:
    try:
        text = data.decode("utf-8", "strict")
    except UnicodeDecodeError:
        raise ResourceError(
            "RESOURCE_INVALID_UTF8", f'Resource "{shown}" is not valid UTF-8'
        ) from None
    return text.removeprefix("\ufeff")


def load_text_from(
    roots: tuple[CapturedRoot, ...], segments: tuple[str, ...]
) -> TextResource | None:
    """The text at ``segments`` from the first root that has it (``None``: none has it)."""
    shown = "/".join(segments)
    for root in roots:
        root.verify()
        target = root.resolve(segments, shown)
        if target is None:
            continue
        data, identity = _read_bytes(target, shown)
        content = _decode(data, shown)
        root.verify()
        try:
            again = os.path.realpath(root.lexical(segments, shown), strict=True)
            info = os.stat(again)
        except OSError:
            raise _changed(shown) from None
        if again != target or _file_identity(info) != identity:
            raise _changed(shown)
        return TextResource(root_id=root.id, path=shown, content=content)
    return None


def _entry_kind(
    root: CapturedRoot, directory: str, name: str, entry: os.DirEntry[str]
) -> str | None:
    """``"file"``, ``"directory"``, or ``None`` to skip: a link that escapes or dangles, an
    entry that vanished or cannot be inspected, any other kind of file."""
    try:
        if entry.is_symlink():
            target = os.path.realpath(os.path.join(directory, name), strict=True)
            if not _inside(root.canonical, target):
                return None
            mode = os.stat(target).st_mode
        else:
            mode = entry.stat(follow_symlinks=False).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    return None


def _list_root(
    root: CapturedRoot, segments: tuple[str, ...], shown: str, found: dict[str, ResourceEntry]
) -> None:
    root.verify()
    directory = root.resolve(segments, shown)
    if directory is None:
        return
    try:
        fd = os.open(directory, os.O_RDONLY | _O_CLOEXEC | _O_DIRECTORY | _O_NOFOLLOW)
    except OSError as error:
        if error.errno in _MISSING:  # a file, not a directory: nothing to list here
            return
        raise _io_failed(shown, error) from error
    try:
        names: list[tuple[str, os.DirEntry[str]]] = []
        with os.scandir(fd) as entries:
            for entry in entries:
                if len(names) >= MAX_DIRECTORY_ENTRIES:
                    raise ResourceError(
                        "RESOURCE_TOO_LARGE",
                        f'Resource directory "{shown}" has more than '
                        f"{MAX_DIRECTORY_ENTRIES} entries",
                    )
                names.append((entry.name, entry))
        if _after_read is not None:
            _after_read(directory)
        for name, entry in names:
            if name in found or not valid_name(name):
                continue
            kind = _entry_kind(root, directory, name, entry)
            if kind == "file" or kind == "directory":
                found[name] = ResourceEntry(root_id=root.id, path=f"{shown}/{name}", kind=kind)
        _check_listed(root, segments, shown, directory, os.fstat(fd))
    except OSError as error:
        raise _io_failed(shown, error) from error
    finally:
        os.close(fd)
    root.verify()


def _check_listed(
    root: CapturedRoot,
    segments: tuple[str, ...],
    shown: str,
    directory: str,
    opened: os.stat_result,
) -> None:
    """The path still resolves to the directory that was listed, else ``RESOURCE_ROOT_CHANGED``."""
    try:
        again = os.path.realpath(root.lexical(segments, shown), strict=True)
        info = os.stat(again)
    except OSError:
        info = None
        again = ""
    if info is None or again != directory or _root_identity(info) != _root_identity(opened):
        raise ResourceError(
            "RESOURCE_ROOT_CHANGED", f'Resource directory "{shown}" changed while it was listed'
        )


def list_directory_of(
    roots: tuple[CapturedRoot, ...], segments: tuple[str, ...]
) -> tuple[ResourceEntry, ...]:
    """The union of the directory at ``segments`` over every root, sorted by name."""
    shown = "/".join(segments)
    found: dict[str, ResourceEntry] = {}
    for root in roots:
        _list_root(root, segments, shown, found)
    return tuple(found[name] for name in sorted(found))
