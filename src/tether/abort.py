"""Cancellation as data: ``AbortController``, ``AbortSignal`` and ``AbortError``.

tether follows the web platform's model because cancellation has to cross model, tool and
loop boundaries and end up in a ``cancelled`` run result with a reason. A controller owns
the right to abort; everything else receives the read-only signal.

"Reject with the abort reason" means: if the reason is an exception instance, that very
object is raised; any other reason is carried by a raised ``AbortError`` as ``.reason``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from tether._errors import TetherError

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
    was not itself an exception, otherwise ``None``.
    """

    def __init__(self, message: str = _DEFAULT_ABORT_MESSAGE, *, reason: object = None) -> None:
        super().__init__("ABORTED", message)
        self.reason = reason


def abort_exception(reason: object) -> BaseException:
    """The exception that "rejecting with ``reason``" raises."""
    if isinstance(reason, BaseException):
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

    __slots__ = ("__weakref__", "_aborted", "_listeners", "_next_token", "_reason")

    _aborted: bool
    _reason: object
    _listeners: dict[int, Listener] | None
    _next_token: int

    def __init__(self) -> None:
        self._aborted = False
        self._reason = None
        self._listeners = {}
        self._next_token = 0

    @property
    def aborted(self) -> bool:
        """Whether the controller has aborted."""
        return self._aborted

    @property
    def reason(self) -> object:
        """The abort reason (``None`` while not aborted; an ``AbortError`` by default)."""
        return self._reason

    def throw_if_aborted(self) -> None:
        """Raise the abort reason if aborted (see the module docstring)."""
        if self._aborted:
            raise abort_exception(self._reason)

    def add_listener(self, callback: Listener) -> Callable[[], None]:
        """Call ``callback()`` once when the signal aborts; returns a function that removes it.

        A listener added after the abort is never called (check ``aborted`` first), and one
        removed before its turn never runs, matching the web platform. An exception raised by
        a listener is reported to the running event loop's exception handler and does not stop
        the other listeners.
        """
        listeners = self._listeners
        if listeners is None or self._aborted:
            return _noop
        token = self._next_token
        self._next_token = token + 1
        listeners[token] = callback

        def remove() -> None:
            current = self._listeners
            if current is not None:
                current.pop(token, None)

        return remove

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
        listeners = self._listeners
        if not listeners:
            self._listeners = None
            return
        failures: list[Exception] = []
        for token in list(listeners):
            callback = listeners.pop(token, None)
            if callback is None:  # removed by an earlier listener
                continue
            try:
                callback()
            except Exception as error:  # one bad listener must not silence the others
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
        """A signal that aborts, with the same reason, as soon as any of ``signals`` does."""
        sources = list(signals)
        for source in sources:
            if not isinstance(source, AbortSignal):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError("AbortSignal.any() accepts only AbortSignal instances")
        controller = AbortController()
        for source in sources:
            if source._aborted:
                controller.abort(source._reason)
                return controller.signal
        removers: list[Callable[[], None]] = []

        def forward(source: AbortSignal) -> Listener:
            def on_abort() -> None:
                for remove in removers:
                    remove()
                controller.abort(source._reason)

            return on_abort

        removers.extend(source.add_listener(forward(source)) for source in sources)
        return controller.signal

    def __repr__(self) -> str:
        state = f"aborted, reason={self._reason!r}" if self._aborted else "not aborted"
        return f"<AbortSignal {state}>"


def _noop() -> None:
    return None


def _report_listener_failures(failures: list[Exception]) -> None:
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise failures[0] from None
    for error in failures:
        context: dict[str, Any] = {"message": "AbortSignal listener raised", "exception": error}
        loop.call_exception_handler(context)


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
        self._signal._abort(reason)  # pyright: ignore[reportPrivateUsage]

    def __repr__(self) -> str:
        return f"<AbortController signal={self._signal!r}>"
