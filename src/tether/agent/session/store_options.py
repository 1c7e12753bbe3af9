"""``SessionStoreOptions``: what a store is built with (clock, ID factory, limits), and the
snapshot of the options a caller passes (the dataclass, or an exact ``dict`` of its fields)."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final, cast

from tether._base.dataclass import dataclass
from tether.agent.session.files import _check_callable
from tether.agent.session.records import SessionLimits, _fail

__all__ = ["SessionStoreOptions"]


def _default_clock() -> str:
    import datetime  # here, not at import: only a store that stamps a record needs it

    now = datetime.datetime.now(datetime.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _default_id() -> str:
    import uuid  # here, not at import: uuid loads platform, and is needed only now

    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStoreOptions:
    """How a store names, stamps and bounds what it writes.

    * ``session_id``: the header ID ``create`` writes (default: a random UUID); checked by
      ``create``: blank or not a string is ``SESSION_INVALID_HEADER``;
    * ``clock``: returns each timestamp (default: ISO-8601 UTC with milliseconds, ``Z``);
    * ``id_factory``: returns each new record ID (default: a random UUID);
    * ``limits``: the ``SessionLimits`` (default: the workshop's).

    ``create``/``load`` also accept a plain ``dict`` with these keys.
    """

    session_id: str | None = None
    clock: Callable[[], str] = _default_clock
    id_factory: Callable[[], str] = _default_id
    limits: SessionLimits = SessionLimits()

    def __post_init__(self) -> None:
        _check_callable("SessionStoreOptions", "clock", self.clock)
        _check_callable("SessionStoreOptions", "id_factory", self.id_factory)
        if type(self.limits) is not SessionLimits:
            raise TypeError("SessionStoreOptions.limits must be a SessionLimits")


_OPTION_KEYS: Final = frozenset(field.name for field in dataclasses.fields(SessionStoreOptions))


def _snapshot_options(options: object) -> SessionStoreOptions:
    """Options as a ``SessionStoreOptions``, reading a ``dict`` without running caller code.

    A ``dict`` subclass or an options subclass may run code on every read (the workshop's
    accessor properties), so it is refused as ``SESSION_INVALID_HEADER`` without a read.
    """
    if options is None:
        return SessionStoreOptions()
    kind = type(options)
    if kind is SessionStoreOptions:
        return cast(SessionStoreOptions, options)
    if kind is dict:
        source = cast("dict[object, object]", options)
        for key in source:
            if type(key) is not str:
                raise TypeError(f"unknown session option of type {type(key).__name__}")
            if key not in _OPTION_KEYS:
                raise TypeError(f"unknown session option {key!r}")
        return SessionStoreOptions(**cast("dict[str, Any]", source))
    if isinstance(options, dict | SessionStoreOptions):
        raise _fail(
            "SESSION_INVALID_HEADER",
            f"Session options must be a plain dict or SessionStoreOptions (got {kind.__name__})",
        )
    raise TypeError(f"Session options must be a dict or SessionStoreOptions (got {kind.__name__})")
