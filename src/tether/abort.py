"""Cancellation as data: ``AbortController``, ``AbortSignal`` and ``AbortError``.

tether follows the web platform's model because cancellation has to cross model, tool and
loop boundaries and end up in a ``cancelled`` run result with a reason. A controller owns
the right to abort; everything else receives the read-only signal.

"Reject with the abort reason" means: if the reason is an ``Exception`` instance, that very
object is raised; any other reason is carried by a raised ``AbortError`` as ``.reason``. That
includes a reason that is a ``BaseException`` but not an ``Exception`` (``KeyboardInterrupt``,
``SystemExit``, ``GeneratorExit``, ``CancelledError``, a custom one): raised as it is, it would
stop a task or the event loop itself instead of ending the aborted work, so an abort never
raises it. Only ``throw_if_aborted``, the caller's own check, raises every exception reason as
it is, like the web platform's ``throwIfAborted``; where tether drives caller code it turns such
a raw reason back into an ``AbortError``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from tether._base.exact_types import instance_of
from tether._base.tether_error import TetherError

if TYPE_CHECKING:
    import asyncio

# asyncio is imported on first use, not at module load: it costs tens of milliseconds and
# protocol values that only carry a signal should not pay for it.

__all__ = ["AbortController", "AbortError", "AbortSignal"]

_DEFAULT_ABORT_MESSAGE: Final = "This operation was aborted"


class AbortError(TetherError):
    """The default abort reason, and the carrier of a non-exception reason.

    ``name == "AbortError"``, ``code == "ABORTED"``; the default message is
    ``"This operation was aborted"``. ``reason`` is the controller's original reason when it
    is not an ``Exception`` (a bare ``BaseException`` reason included), otherwise ``None``.
    """

    def __init__(self, message: str = _DEFAULT_ABORT_MESSAGE, *, reason: object = None) -> None:
        super().__init__("ABORTED", message)
        self.reason = reason


def abort_exception(reason: object) -> Exception:
    """The exception that "rejecting with ``reason``" raises: an ``Exception`` reason itself,
    else an ``AbortError`` carrying the reason (see the module docstring)."""
    if isinstance(reason, Exception):
        return reason
    return AbortError(reason=reason)


Listener = Callable[[], object]


class AbortSignal:
    """A read-only view of an ``AbortController``'s state.

    Listeners registered with ``add_listener`` run once, synchronously, when the controller
    aborts; ``await signal.wait()`` returns at that moment (no polling, no timers). The state
    lives in slots read by tether through the class, so shadowing it on a subclass instance
    cannot lie to the runtime.
    """

    __slots__ = (
        "__weakref__",
        "_aborted",
        "_link",
        "_listeners",
        "_next_token",
        "_reason",
        "_sweep_at",
    )

    _aborted: bool
    _reason: object
    _listeners: dict[int, Listener] | None
    _next_token: int
    _link: _Link | None  # set on a signal made by ``any()``: its tie to its sources
    _sweep_at: int  # listener count at which ``any()`` next sweeps out dead forwarders

    def __init__(self) -> None:
        self._aborted = False
        self._reason = None
        self._listeners = {}
        self._next_token = 0
        self._link = None
        self._sweep_at = _SWEEP_MINIMUM

    @property
    def aborted(self) -> bool:
        """Whether the controller has aborted."""
        return self._aborted

    @property
    def reason(self) -> object:
        """The abort reason (``None`` while not aborted; an ``AbortError`` by default)."""
        return self._reason

    def throw_if_aborted(self) -> None:
        """Raise the abort reason if aborted: any exception reason as it is (a bare
        ``BaseException`` too, as on the web platform), any other reason in an ``AbortError``."""
        if self._aborted:
            reason = self._reason
            raise reason if isinstance(reason, BaseException) else AbortError(reason=reason)

    def add_listener(self, callback: Listener) -> Callable[[], None]:
        """Call ``callback()`` once when the signal aborts; returns a function that removes it.

        A listener added after the abort is never called (check ``aborted`` first), and one
        removed before its turn never runs, matching the web platform. A failing listener
        never stops the others: every listener runs, then an ``Exception`` is reported to the
        running event loop's exception handler (raised by ``abort()`` when no loop runs), and
        the first failure that is not an ``Exception`` (``CancelledError``,
        ``KeyboardInterrupt``, ...) is re-raised by ``abort()``, after the others were reported.

        A signal made by ``any()`` is kept alive by its sources while it has listeners, so
        they still run even when nothing else refers to it.
        """
        listeners = self._listeners
        if listeners is None or self._aborted:
            return _noop
        token = self._next_token
        self._next_token = token + 1
        listeners[token] = callback
        link = self._link
        if link is not None:
            link.pinned = self
        return _Removal(self, token)

    async def wait(self) -> None:
        """Return once the signal is aborted (immediately if it already is)."""
        if self._aborted:
            return
        import asyncio

        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def release() -> None:
            if not waiter.done():
                waiter.set_result(None)

        remove = self.add_listener(release)
        try:
            await waiter
        finally:
            remove()

    def _abort(self, reason: object) -> None:
        if self._aborted:
            return
        self._reason = AbortError() if reason is None else reason
        self._aborted = True
        link = self._link
        if link is not None:  # a signal made by ``any()``: its sources no longer matter
            self._link = None
            link.detach()
        listeners = self._listeners
        if not listeners:
            self._listeners = None
            return
        failures: list[BaseException] = []
        for token in list(listeners):
            callback = listeners.pop(token, None)
            if callback is None:  # removed by an earlier listener
                continue
            try:
                callback()
            except BaseException as error:  # one bad listener must not silence the others
                failures.append(error)
        self._listeners = None
        if failures:
            _report_listener_failures(failures)

    @classmethod
    def timeout(cls, seconds: float) -> AbortSignal:
        """A signal that aborts with a ``TimeoutError`` after ``seconds`` on the running loop."""
        import asyncio

        controller = AbortController()
        loop = asyncio.get_running_loop()
        loop.call_later(seconds, controller.abort, TimeoutError("The operation timed out"))
        return controller.signal

    @classmethod
    def any(cls, signals: Iterable[AbortSignal]) -> AbortSignal:
        """A signal that aborts, with the same reason, as soon as any of ``signals`` does.

        Its sources do not keep it alive (a long-lived source outlives many such signals):
        they refer to it weakly, except while it has listeners of its own. A source drops its
        listener when the signal aborts, and sweeps out listeners of signals that were
        garbage-collected as new ones are added, so their number stays bounded. As on the
        web platform, a signal made by ``any()`` given as a source stands for its own sources.
        """
        sources = list(signals)
        for source in sources:
            if not instance_of(source, AbortSignal):
                raise TypeError("AbortSignal.any() accepts only AbortSignal instances")
        dependent = AbortSignal()
        for source in sources:
            if source._aborted:
                dependent._abort(source._reason)
                return dependent
        roots = _roots_of(sources)
        for root in roots:  # a source made by ``any()`` whose own source is aborting
            if root._aborted:
                dependent._abort(root._reason)
                return dependent
        if roots:
            link = _Link(dependent, roots)
            dependent._link = link
            link.attach()
        return dependent

    def __repr__(self) -> str:
        state = f"aborted, reason={self._reason!r}" if self._aborted else "not aborted"
        return f"<AbortSignal {state}>"


def _noop() -> None:
    return None


def _report_listener_failures(failures: list[BaseException]) -> None:
    """Once every listener ran: re-raise the first failure that is not an ``Exception``, after
    reporting the others to the running loop's exception handler. Without a running loop the
    first failure of that kind, else the first failure, is raised and the rest are dropped."""
    import asyncio

    escaping = next((error for error in failures if not isinstance(error, Exception)), None)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise (failures[0] if escaping is None else escaping) from None
    for error in failures:
        if error is not escaping:
            context: dict[str, Any] = {"message": "AbortSignal listener raised", "exception": error}
            loop.call_exception_handler(context)
    if escaping is not None:
        raise escaping


_SWEEP_MINIMUM: Final = 16
"""Fewest listeners on a source before ``any()`` sweeps out forwarders of collected signals."""


def _roots_of(sources: list[AbortSignal]) -> list[AbortSignal]:
    """The signals to listen on: each source once, a signal made by ``any()`` replaced by its
    own sources. Forwarders therefore sit only on signals that no ``_Link`` depends on."""
    seen: set[int] = set()
    roots: list[AbortSignal] = []
    for source in sources:
        link = source._link  # pyright: ignore[reportPrivateUsage] - abort.py's own friends
        for root in (source,) if link is None else link.sources:
            if id(root) not in seen:
                seen.add(id(root))
                roots.append(root)
    return roots


class _Link:
    """The tie between a signal made by ``any()`` (the dependent) and its sources.

    The sources' forwarding listeners hold the link; the link holds the dependent only through
    a weak reference, plus ``pinned`` while the dependent has listeners of its own (they must
    still run when nothing else refers to it). So a dependent that nobody uses any more is
    collected although its sources live on; its forwarders are then dead and ``_sweep`` drops
    them. The link holds its sources strongly: a dependent keeps its sources alive, never the
    reverse.
    """

    __slots__ = ("pinned", "sources", "target", "tokens")

    def __init__(self, dependent: AbortSignal, sources: list[AbortSignal]) -> None:
        self.target = weakref.ref(dependent)
        self.sources = sources
        self.tokens: list[int] = []
        self.pinned: AbortSignal | None = None

    def attach(self) -> None:
        """Register one forwarder on each source (all are live and not aborted)."""
        tokens = self.tokens
        for source in self.sources:
            listeners = source._listeners  # pyright: ignore[reportPrivateUsage] - abort.py's own friends
            assert listeners is not None
            if len(listeners) >= source._sweep_at:  # pyright: ignore[reportPrivateUsage] - abort.py's own friends
                _sweep(source, listeners)
            token = source._next_token  # pyright: ignore[reportPrivateUsage] - abort.py's own friends
            source._next_token = token + 1  # pyright: ignore[reportPrivateUsage] - abort.py's own friends
            listeners[token] = _Forward(self, source)
            tokens.append(token)

    def detach(self) -> None:
        """Remove every forwarder of this link from its sources; idempotent."""
        tokens, self.tokens = self.tokens, []
        self.pinned = None
        for source, token in zip(self.sources, tokens, strict=False):
            listeners = source._listeners  # pyright: ignore[reportPrivateUsage] - abort.py's own friends
            if listeners is not None:
                listeners.pop(token, None)

    def dead(self) -> bool:
        return self.target() is None


class _Forward:
    """A source's listener that aborts the dependent of ``link`` with the source's reason."""

    __slots__ = ("link", "source")

    def __init__(self, link: _Link, source: AbortSignal) -> None:
        self.link = link
        self.source = source

    def __call__(self) -> None:
        link = self.link
        dependent = link.target()
        if dependent is None:
            link.detach()
        else:
            dependent._abort(self.source._reason)  # pyright: ignore[reportPrivateUsage] - abort.py's own friends


def _sweep(source: AbortSignal, listeners: dict[int, Listener]) -> None:
    """Drop the forwarders of collected dependents from ``source``. The next sweep waits until
    the listeners doubled, so sweeping costs amortized O(1) per ``any()`` call."""
    for callback in list(listeners.values()):
        if isinstance(callback, _Forward) and callback.link.dead():
            callback.link.detach()
    source._sweep_at = max(_SWEEP_MINIMUM, 2 * len(listeners))  # pyright: ignore[reportPrivateUsage] - abort.py's own friends


class AbortController:
    """Owns an ``AbortSignal`` and the right to abort it.

    ``abort(reason=None)``: the first call wins; later calls do nothing. ``None`` means the
    default reason, a fresh ``AbortError()``.
    """

    __slots__ = ("_signal",)

    def __init__(self) -> None:
        self._signal = AbortSignal()

    @property
    def signal(self) -> AbortSignal:
        """The signal this controller aborts."""
        return self._signal

    def abort(self, reason: object = None) -> None:
        """Abort the signal with ``reason`` and run its listeners once, in order."""
        self._signal._abort(reason)  # pyright: ignore[reportPrivateUsage] - abort.py's own friends

    def __repr__(self) -> str:
        return f"<AbortController signal={self._signal!r}>"


class _Removal:
    """What ``AbortSignal.add_listener`` returns: calling it removes that one listener.

    One small object instead of a closure (a function, its two cells and their tuple): a run
    keeps a listener on its signals for as long as it waits, so with thousands of runs in
    flight these objects are a good share of what the cycle collector walks.
    """

    __slots__ = ("_signal", "_token")

    def __init__(self, signal: AbortSignal, token: int) -> None:
        self._signal = signal
        self._token = token

    def __call__(self) -> None:
        signal = self._signal
        current = _LISTENERS.__get__(signal, AbortSignal)
        if current is not None and current.pop(self._token, None) is not None and not current:
            unpinned = _LINK.__get__(signal, AbortSignal)
            if unpinned is not None:
                unpinned.pinned = None


_LISTENERS: Final = AbortSignal.__dict__["_listeners"]
_LINK: Final = AbortSignal.__dict__["_link"]
