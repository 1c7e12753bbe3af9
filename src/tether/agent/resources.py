"""Checkpoint 12 resources: read-only text files from an ordered list of trusted roots.

A ``ResourceLoader`` holds directories ("roots") in precedence order. ``load_text(path)``
normalizes a relative ``/``-separated path by a grammar that is the same on every host OS, then
tries each root in turn: the first root that has the file wins, a root without it is skipped,
and ``None`` means no root has it. Every step fails closed with a ``ResourceError`` whose
``code`` is stable:

* the root must still be the directory captured by ``ResourceLoader.create`` (same canonical
  path and identity ``(st_dev, st_ino, birth time)``), checked before and after every read;
* the canonical target (after symlinks) must stay inside the canonical root;
* the file is opened ``O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK`` (non-blocking so a
  FIFO never hangs the open; the flag is cleared once ``fstat`` shows a regular file), at most
  ``MAX_RESOURCE_TEXT_BYTES + 1`` bytes are read, and ``fstat`` afterwards must show the same
  identity, size and mtime, with the size equal to the bytes read;
* the bytes must be strict UTF-8. A single leading byte-order mark is **removed** (as the
  workshop's ``TextDecoder`` does by default), so front matter parsers see ``---`` first.

``list_directory(path)`` (beyond the workshop, for skills and prompt templates) lists the
union of one relative directory over all roots under the same grammar and confinement.

Threads: the filesystem work of one ``create``/``load_text``/``list_directory`` call runs in
one worker thread (``asyncio.to_thread``). Measured on a local disk, a small ``load_text`` costs
about 150 us inline and 330 us through the thread, and a 1 MiB read stays around a
millisecond either way; but each call does several ``realpath``/``stat`` walks, and on a
network or FUSE filesystem any of them can block for seconds, so one thread hop per call keeps
the event loop responsive regardless. A cancelled call stops waiting at once; the thread
finishes its (bounded) work and its result is discarded.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal, NoReturn, TypeAlias, cast, get_args

from tether._dataclass import dataclass
from tether._errors import TetherError
from tether._text import JS_WHITESPACE, is_non_empty

__all__ = [
    "MAX_DIRECTORY_ENTRIES",
    "MAX_RESOURCE_TEXT_BYTES",
    "RESOURCE_ERROR_CODES",
    "ResourceEntry",
    "ResourceEntryKind",
    "ResourceError",
    "ResourceErrorCode",
    "ResourceLoader",
    "ResourceRoot",
    "ResourceRootDefinition",
    "TextResource",
    "normalize_resource_path",
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


# --- test seam ----------------------------------------------------------------------------------

_after_read: Callable[[str], None] | None = None
"""Test seam: when set, called (in the worker thread) with the canonical target path after a
file's bytes were read and before the open descriptor is re-checked, and with a directory's
canonical path after its names were read and before they are inspected, so a test can
replace either mid-operation. Production code never sets it."""


# --- path grammar -------------------------------------------------------------------------------

_RESERVED_NAMES: Final = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{digit}" for digit in range(1, 10)}
    | {f"lpt{digit}" for digit in range(1, 10)}
)


def _outside(message: str) -> NoReturn:
    raise ResourceError("RESOURCE_OUTSIDE_TRUSTED_ROOTS", message)


def _segments(path: object) -> tuple[str, ...]:
    if type(path) is not str or not path:
        _outside("Resource path must be a non-empty string")
    if "\0" in path:
        _outside("Resource path must not contain NUL")
    text = path.replace("\\", "/")
    if text.startswith("/"):
        _outside("Resource path must be relative")
    if ":" in text:
        _outside("Resource path must not contain ':'")
    stack: list[str] = []
    for segment in text.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not stack:
                _outside("Resource path climbs above its root")
            stack.pop()
            continue
        _check_segment(segment)
        stack.append(segment)
    if not stack:
        _outside("Resource path names no file")
    return tuple(stack)


def _check_segment(segment: str) -> None:
    if segment.endswith((".", " ")):
        _outside("Resource path segment must not end in '.' or a space")
    if segment.split(".", 1)[0].lower() in _RESERVED_NAMES:
        _outside("Resource path segment is a reserved device name")


def _valid_name(name: str) -> bool:
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
    return "/".join(_segments(path))


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
class _Root:
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
            _outside(f'Resource "{shown}" is outside the trusted roots')
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
            _outside(f'Resource "{shown}" is outside the trusted roots')
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


def _capture(definitions: tuple[tuple[str, str], ...]) -> tuple[_Root, ...]:
    roots: list[_Root] = []
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
        roots.append(_Root(root_id, configured, canonical, _root_identity(info)))
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


def _load(roots: tuple[_Root, ...], segments: tuple[str, ...]) -> TextResource | None:
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


def _entry_kind(root: _Root, directory: str, name: str, entry: os.DirEntry[str]) -> str | None:
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
    root: _Root, segments: tuple[str, ...], shown: str, found: dict[str, ResourceEntry]
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
            if name in found or not _valid_name(name):
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
    root: _Root, segments: tuple[str, ...], shown: str, directory: str, opened: os.stat_result
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


def _list(roots: tuple[_Root, ...], segments: tuple[str, ...]) -> tuple[ResourceEntry, ...]:
    shown = "/".join(segments)
    found: dict[str, ResourceEntry] = {}
    for root in roots:
        _list_root(root, segments, shown, found)
    return tuple(found[name] for name in sorted(found))


# --- the loader ---------------------------------------------------------------------------------

_CONSTRUCT: Final = object()


def _invalid(message: str) -> NoReturn:
    raise ResourceError("RESOURCE_INVALID_ROOTS", message)


def _definition(index: int, entry: object) -> tuple[str, str]:
    root_id: object
    directory: object
    if type(entry) is ResourceRootDefinition:
        root_id, directory = entry.id, entry.directory
    elif type(entry) is dict:
        fields = cast("dict[object, object]", entry)
        if "id" not in fields or "directory" not in fields:
            _invalid(f"Resource root {index} must have an id and a directory")
        root_id, directory = fields["id"], fields["directory"]
    else:
        _invalid(f"Resource root {index} must be a ResourceRootDefinition or a dict")
    if not is_non_empty(root_id) or root_id != root_id.strip(JS_WHITESPACE):
        _invalid(f"Resource root {index} needs a non-empty id without surrounding whitespace")
    if type(directory) is not str and isinstance(directory, os.PathLike):
        try:
            converted: object = os.fspath(cast("os.PathLike[str]", directory))
            directory = converted
        except Exception:
            _invalid(f'Resource root "{root_id}" has an unusable directory')
    if type(directory) is not str or not directory or "\0" in directory:
        _invalid(f'Resource root "{root_id}" needs a non-empty directory without NUL')
    return root_id, directory


class ResourceLoader:
    """Reads text resources from trusted roots in precedence order (see the module docs).

    Build one with ``await ResourceLoader.create(definitions)``; calling the class directly
    raises ``TypeError``. A loader is immutable and safe to share between tasks.
    """

    __slots__ = ("_roots",)
    _roots: tuple[_Root, ...]

    def __init__(self, *args: object, **kwargs: object) -> None:
        if len(args) != 2 or kwargs or args[0] is not _CONSTRUCT:
            raise TypeError("use 'await ResourceLoader.create(definitions)' to build a loader")
        object.__setattr__(self, "_roots", args[1])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"ResourceLoader is immutable (cannot set {name!r})")

    @classmethod
    async def create(
        cls, definitions: Sequence[ResourceRootDefinition | Mapping[str, object]]
    ) -> ResourceLoader:
        """A loader over ``definitions`` (first = highest precedence).

        ``definitions`` must be an exact, non-empty ``list`` or ``tuple`` (no subclass) of
        ``ResourceRootDefinition`` or exact ``dict`` entries with ``id`` (non-empty, no
        surrounding whitespace) and ``directory`` (a non-empty path without NUL, relative to the
        current directory): else ``RESOURCE_INVALID_ROOTS``. Repeated ids:
        ``DUPLICATE_RESOURCE_ROOT_ID``. A directory that cannot be resolved:
        ``RESOURCE_IO_FAILED``; one that is not a directory: ``RESOURCE_INVALID_ROOTS``.
        """
        items: object = definitions
        if type(items) is not list and type(items) is not tuple:
            _invalid("Resource roots must be a list or tuple")
        entries = tuple(cast("Sequence[object]", items))
        if not entries:
            _invalid("At least one resource root is required")
        parsed = tuple(_definition(index, entry) for index, entry in enumerate(entries))
        seen: set[str] = set()
        for root_id, _ in parsed:
            if root_id in seen:
                raise ResourceError(
                    "DUPLICATE_RESOURCE_ROOT_ID", f'Duplicate resource root id "{root_id}"'
                )
            seen.add(root_id)
        roots = await asyncio.to_thread(_capture, parsed)
        return cls(_CONSTRUCT, roots)

    @property
    def roots(self) -> tuple[ResourceRoot, ...]:
        """The roots in precedence order, with canonical directories."""
        return tuple(ResourceRoot(id=root.id, directory=root.canonical) for root in self._roots)

    async def load_text(self, path: str) -> TextResource | None:
        """The text of ``path`` from the first root that has it, or ``None`` when none does.

        ``path`` follows ``normalize_resource_path``. Failures raise ``ResourceError``:
        ``RESOURCE_OUTSIDE_TRUSTED_ROOTS`` (grammar, or a symlink leaving the root),
        ``RESOURCE_ROOT_CHANGED`` (the root or the file was replaced around the read),
        ``RESOURCE_NOT_FILE``, ``RESOURCE_TOO_LARGE`` (over ``MAX_RESOURCE_TEXT_BYTES``),
        ``RESOURCE_INVALID_UTF8`` and ``RESOURCE_IO_FAILED``. A failure in a root that has the
        path is final: later roots are not tried.
        """
        segments = _segments(path)
        return await asyncio.to_thread(_load, self._roots, segments)

    async def list_directory(self, path: str) -> tuple[ResourceEntry, ...]:
        """The union over the roots of the names in directory ``path``, sorted by name.

        A name several roots have is reported once, from the highest-precedence root. Only
        regular files and directories are listed; a symlink is followed when its target stays
        inside its root and skipped otherwise (dangling too), as are names the path grammar
        would reject (``con.txt``, ``a:b``, ``x.``) and names that are not valid UTF-8
        (undecodable bytes). A root where ``path`` is missing or not a directory contributes
        nothing, so a directory no root has lists as ``()``. The directory itself escaping
        its root: ``RESOURCE_OUTSIDE_TRUSTED_ROOTS``; more than ``MAX_DIRECTORY_ENTRIES``
        entries in one root: ``RESOURCE_TOO_LARGE``; root checks as in ``load_text``.
        """
        segments = _segments(path)
        return await asyncio.to_thread(_list, self._roots, segments)

    def __repr__(self) -> str:
        ids = ", ".join(repr(root.id) for root in self._roots)
        return f"ResourceLoader(roots=[{ids}])"
