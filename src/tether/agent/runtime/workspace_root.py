"""The workspace of a runtime: its canonical root and identity, the session file's place in
it, the session parents a ``create`` makes (and removes on rollback), and the process-wide
registry of session files held by runtimes.

* **Capture.** ``os.path.realpath(cwd, strict=True)`` and ``os.stat`` give the canonical root
  and its identity ``(device, inode, birth time)``; a missing or non-directory ``cwd`` is
  ``RUNTIME_INVALID_OPTIONS``. The session path is the root plus the checked segments. Its
  nearest existing ancestor must be a directory whose real path is inside the root (a
  symlinked parent escaping the root is refused).
* **Identity check** (``RUNTIME_ROOT_CHANGED``): the configured ``cwd`` must still resolve to
  the same canonical root with the same identity; a root renamed away and recreated fails.
* **Session directory** (tether's): with ``RuntimeSessionOptions.directory`` the session path
  is relative to that directory instead of the root (the CLI keeps sessions in a per-user
  data directory); it is captured and identity-checked like the root, and everything said
  here about the session file's place "inside the root" applies to it.
* **Session parents.** ``resume`` needs every parent to exist; ``create`` makes the missing
  ones top-down (one level per ``mkdir``, ``EEXIST`` tolerated), checks each is a real
  directory inside the root, and records only those this call made. Rollback removes them
  bottom-up, each only while it is still the directory that was made (an ``rmdir``, so one that
  gained content stays); a changed one is kept and reported ``RUNTIME_SESSION_ROLLBACK_FAILED``.
* **Session claims** (tether's): one runtime per session file in this process, keyed by the
  file's canonical path, from construction until disposal (``RUNTIME_SESSION_IN_USE``). A
  manager replacing its current runtime with one on the same file shares the claim, and the
  session store, while both exist (see ``tether.agent.runtime``). Across processes the
  store's own lock refuses a second writer (``SESSION_IN_USE``, which the session step
  reports as ``RUNTIME_SESSION_IN_USE``).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Final

from tether._base.dataclass import dataclass
from tether.agent.runtime.errors import TetherRuntimeError, fail
from tether.agent.runtime.options import CapturedWorkspaceOptions, RuntimeSessionMode

__all__ = [
    "Anchor",
    "CreatedParent",
    "Identity",
    "RuntimeWorkspace",
    "SessionClaim",
    "WorkspaceState",
    "capture_workspace",
    "claim_session",
    "identity_of",
    "inside",
    "remove_parents",
    "sync_directory",
]

Identity = tuple[int, int, object]
"""(device, inode, birth time or None)."""


def identity_of(info: os.stat_result) -> Identity:
    """The identity of a stat result (birth time where the platform records one)."""
    birth: object = getattr(info, "st_birthtime_ns", None)
    if birth is None:  # pragma: no branch - per platform
        birth = getattr(info, "st_birthtime", None)
    return (info.st_dev, info.st_ino, birth)


def inside(root: str, path: str, *, strictly: bool = False) -> bool:
    """Whether canonical ``path`` is ``root`` or below it (``strictly``: below it only)."""
    if path == root:
        return not strictly
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


def sync_directory(path: str) -> None:
    """fsync a directory (where the platform allows it), so a removal is durable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover - the directory was just used
        return
    try:
        os.fsync(fd)
    except OSError as error:  # pragma: no cover - per platform
        if error.errno not in (errno.EINVAL, errno.EPERM, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeWorkspace:
    """A runtime's workspace: the canonical ``root``, the absolute ``session_path`` and the
    ``session_mode`` it was built with."""

    root: str
    session_path: str
    session_mode: RuntimeSessionMode


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatedParent:
    """A session parent this construction made: where, its real path and identity."""

    path: str
    realpath: str
    identity: Identity


class Anchor:
    """A directory captured by canonical path and identity, checked again later."""

    __slots__ = ("configured", "identity", "label", "real")

    def __init__(self, configured: str, label: str) -> None:
        try:
            real = os.path.realpath(configured, strict=True)
            info = os.stat(real)
        except OSError as error:
            raise fail(
                "RUNTIME_INVALID_OPTIONS",
                f"Runtime {label} cannot be resolved to a directory",
                error,
            ) from error
        if not stat.S_ISDIR(info.st_mode):
            raise TetherRuntimeError(
                "RUNTIME_INVALID_OPTIONS", f"Runtime {label} is not a directory"
            )
        self.configured = configured
        self.label = label
        self.real = real
        self.identity = identity_of(info)

    def check(self, name: str) -> None:
        """``RUNTIME_ROOT_CHANGED`` unless the configured path still resolves to the same
        directory (``name`` says which in the message)."""
        try:
            real = os.path.realpath(self.configured, strict=True)
            info = os.stat(real)
        except OSError as error:
            raise fail(
                "RUNTIME_ROOT_CHANGED", f"Runtime {name} is no longer there", error
            ) from error
        if (
            real != self.real
            or not stat.S_ISDIR(info.st_mode)
            or identity_of(info) != self.identity
        ):
            raise TetherRuntimeError(
                "RUNTIME_ROOT_CHANGED", f"Runtime {name} was replaced or moved"
            )


class WorkspaceState:
    """The captured workspace with the checks that run before and after every factory.

    ``session_root`` is the directory the session path is relative to: the workspace root,
    or ``RuntimeSessionOptions.directory`` when given (checked the same way)."""

    __slots__ = ("anchor", "public", "segments", "session_anchor", "session_key", "where")

    def __init__(
        self,
        *,
        anchor: Anchor,
        session_anchor: Anchor,
        public: RuntimeWorkspace,
        segments: tuple[str, ...],
        session_key: str,
    ) -> None:
        self.anchor = anchor
        self.session_anchor = session_anchor
        self.public = public
        self.segments = segments
        self.session_key = session_key
        self.where = "workspace root" if session_anchor is anchor else "session directory"

    @property
    def session_root(self) -> str:
        """The canonical directory the session path is relative to."""
        return self.session_anchor.real

    def check(self) -> None:
        """``RUNTIME_ROOT_CHANGED`` unless the workspace root (and a separate session
        directory) still resolve to the same directories."""
        self.anchor.check("workspace root")
        if self.session_anchor is not self.anchor:
            self.session_anchor.check("session directory")

    def parent_paths(self) -> tuple[str, ...]:
        """The session file's ancestors below the root, top-down."""
        root = self.session_root
        return tuple(
            os.path.join(root, *self.segments[:depth]) for depth in range(1, len(self.segments))
        )

    def check_parent(self) -> None:
        """The session file's parent must be a directory inside the root (confinement)."""
        parent = os.path.dirname(self.public.session_path)
        try:
            real = os.path.realpath(parent, strict=True)
            info = os.stat(real)
        except OSError as error:
            raise fail(
                "RUNTIME_INVALID_OPTIONS", "Runtime session parent directory is missing", error
            ) from error
        if not stat.S_ISDIR(info.st_mode) or not inside(self.session_root, real):
            raise TetherRuntimeError(
                "RUNTIME_INVALID_OPTIONS", f"Runtime session parent escapes the {self.where}"
            )

    def prepare_parents(self) -> tuple[CreatedParent, ...]:
        """Check (``resume``) or create (``create``) the session parents; returns those made."""
        created: list[CreatedParent] = []
        for path in self.parent_paths():
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                info = None
            if info is None:
                if self.public.session_mode == "resume":
                    raise TetherRuntimeError(
                        "RUNTIME_INVALID_OPTIONS",
                        "Runtime session parent directory does not exist (mode 'resume')",
                    )
                try:
                    os.mkdir(path, 0o700)
                    made = True
                except FileExistsError:  # pragma: no cover - another process made it first
                    made = False
                info = os.lstat(path)
                real = self._confined(path, info)
                if made:  # pragma: no branch - see above
                    created.append(
                        CreatedParent(path=path, realpath=real, identity=identity_of(info))
                    )
            else:
                self._confined(path, os.stat(path))
        return tuple(created)

    def _confined(self, path: str, info: os.stat_result) -> str:
        real = os.path.realpath(path, strict=True)
        # Capture checked the nearest existing ancestor: only a race gets here.
        confined = stat.S_ISDIR(info.st_mode) and inside(self.session_root, real, strictly=True)
        if not confined:  # pragma: no cover
            raise TetherRuntimeError(
                "RUNTIME_INVALID_OPTIONS",
                f"Runtime session parent is not a directory inside the {self.where}",
            )
        return real


def remove_parents(created: tuple[CreatedParent, ...]) -> None:
    """Remove the parents a construction made, bottom-up, each only while unchanged (an empty
    directory with the same identity and real path). ``RUNTIME_SESSION_ROLLBACK_FAILED`` names
    what was kept."""
    kept: list[str] = []
    for parent in reversed(created):
        try:
            info = os.lstat(parent.path)
            unchanged = (
                stat.S_ISDIR(info.st_mode)
                and identity_of(info) == parent.identity
                and os.path.realpath(parent.path) == parent.realpath
            )
            if unchanged:
                os.rmdir(parent.path)
                sync_directory(os.path.dirname(parent.path))
                continue
        except OSError:
            pass
        kept.append(parent.path)
    if kept:
        raise TetherRuntimeError(
            "RUNTIME_SESSION_ROLLBACK_FAILED",
            f"Runtime session parent directories changed and were kept: {', '.join(kept)}",
        )


def capture_workspace(options: CapturedWorkspaceOptions) -> WorkspaceState:
    """Resolve and check the workspace of ``options`` (see the module docstring)."""
    anchor = Anchor(options.cwd, "cwd")
    directory = options.session.directory
    session_anchor = anchor if directory is None else Anchor(directory, "session directory")
    where = "workspace root" if directory is None else "session directory"
    base = session_anchor.real
    segments = options.session.segments
    session_path = os.path.join(base, *segments)
    if not inside(base, session_path, strictly=True):  # pragma: no cover - the grammar
        raise TetherRuntimeError(
            "RUNTIME_INVALID_OPTIONS", "Runtime session path is not inside its directory"
        )
    # The nearest existing ancestor of the file's parent: a directory inside the base.
    depth = len(segments) - 1
    while True:
        ancestor = os.path.join(base, *segments[:depth])
        if os.path.lexists(ancestor):
            break
        depth -= 1
    real = os.path.realpath(ancestor)
    if not os.path.isdir(real) or not inside(base, real):
        raise TetherRuntimeError(
            "RUNTIME_INVALID_OPTIONS",
            f"Runtime session parent is not a directory inside the {where}",
        )
    key = os.path.normcase(os.path.join(real, *segments[depth:]))
    return WorkspaceState(
        anchor=anchor,
        session_anchor=session_anchor,
        public=RuntimeWorkspace(
            root=anchor.real, session_path=session_path, session_mode=options.session.mode
        ),
        segments=segments,
        session_key=key,
    )


class SessionClaim:
    """One runtime's hold on a session file (see ``claim_session``)."""

    __slots__ = ("key", "released")

    def __init__(self, key: str) -> None:
        self.key = key
        self.released = False

    @property
    def shared(self) -> bool:
        """Whether another runtime holds the same file right now (a same-file replacement)."""
        return len(_CLAIMS.get(self.key, ())) > 1

    def release(self) -> None:
        """Give the file up (idempotent)."""
        if self.released:
            return
        self.released = True
        holders = _CLAIMS.get(self.key)
        if holders is not None:
            holders.remove(self)
            if not holders:
                del _CLAIMS[self.key]


_CLAIMS: Final[dict[str, list[SessionClaim]]] = {}
"""Canonical session path -> the claims holding it (two only during a same-file replacement)."""


def claim_session(key: str, share_with: SessionClaim | None = None) -> SessionClaim:
    """Hold ``key``; ``RUNTIME_SESSION_IN_USE`` if a runtime holds it, unless the only holder
    is ``share_with`` (a manager's current runtime, idle: checked by the caller)."""
    holders = _CLAIMS.get(key)
    if holders and (share_with is None or holders != [share_with]):
        raise TetherRuntimeError(
            "RUNTIME_SESSION_IN_USE",
            f"Another runtime in this process holds the session file {key}",
        )
    claim = SessionClaim(key)
    _CLAIMS.setdefault(key, []).append(claim)
    return claim
