"""Settling caller values under the abort signal: each awaitable produced by caller code is
raced against the signal, and a value that arrives after the abort is cleaned up by its
ownership method (looked up without running caller code)."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import Any, cast

from tether._async.race import neutralize, signal_aborted, start_cleanup
from tether._base.exact_types import is_awaitable
from tether.abort import AbortSignal
from tether.evals.runner._steps import MISSING, Step
from tether.evals.types import MAX_OWNERSHIP_DEPTH


def ownership_method(value: object, name: str) -> Callable[[], object]:
    """``value``'s ``name`` method, looked up without running caller code: an instance
    attribute, a slot, or a plain function (or static/class method) on one of the first
    ``MAX_OWNERSHIP_DEPTH`` classes of its MRO. Properties and other descriptors are rejected
    (``ValueError``), as is anything not callable."""
    owner = type(value)
    found: object = MISSING
    for klass in owner.__mro__[:MAX_OWNERSHIP_DEPTH]:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            break
    descriptor = type(found)
    method: object
    if isinstance(found, types.MemberDescriptorType):
        try:
            method = found.__get__(value, owner)
        except AttributeError:
            raise ValueError(f"{name} is not set") from None
    else:
        if found is not MISSING and hasattr(descriptor, "__set__"):
            raise ValueError(f"{name} must not be a property")
        try:
            own: object = object.__getattribute__(value, "__dict__")
        except AttributeError:
            own = None
        if type(own) is dict and name in own:
            method = cast("dict[str, object]", own)[name]
        elif found is MISSING:
            raise ValueError(f"{name} is missing")
        elif isinstance(found, types.FunctionType):
            method = types.MethodType(found, value)
        elif isinstance(found, staticmethod):
            method = cast("staticmethod[..., object]", found).__func__
        elif isinstance(found, classmethod):
            method = types.MethodType(cast("classmethod[Any, ..., object]", found).__func__, owner)
        elif hasattr(descriptor, "__get__"):
            raise ValueError(f"{name} must be a plain function")
        else:
            method = found
    if not callable(method):
        raise ValueError(f"{name} must be callable")
    return cast("Callable[[], object]", method)


PENDING: set[asyncio.Future[Any]] = set()
"""Strong references to abandoned work until it settles (the loop holds only weak ones)."""


def late_cleanup(method_name: str | None) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback for abandoned work: clean up a value that arrives after the abort
    (``cleanup`` / ``dispose``), swallowing every failure."""

    def done(future: asyncio.Future[Any]) -> None:
        PENDING.discard(future)
        if future.cancelled() or future.exception() is not None:
            return
        if method_name is None:
            return
        value = future.result()
        try:
            result = ownership_method(value, method_name)()
        except Exception:
            return
        if is_awaitable(result):
            start_cleanup(result)

    return done


async def settle_value(signal: AbortSignal, value: object, late: str | None) -> Any:
    """``value`` itself, or what it resolves to if it is awaitable, raced against ``signal``.

    On abort raises ``Step("EVALUATION_CANCELLED")`` at once and leaves the work running;
    ``late`` names the method that cleans its value if one still arrives. The work's own
    failure propagates unchanged.
    """
    if not is_awaitable(value):
        return value
    if signal_aborted(signal):
        if isinstance(value, asyncio.Future):  # already running: clean what it produces
            PENDING.add(value)
            value.add_done_callback(late_cleanup(late))
        else:
            neutralize(value)
        raise Step("EVALUATION_CANCELLED", "aborted")
    work: asyncio.Future[Any] = asyncio.ensure_future(value)
    loop = asyncio.get_running_loop()
    aborted: asyncio.Future[None] = loop.create_future()

    def wake() -> None:  # runs at most once, and never after ``remove()``
        aborted.set_result(None)

    remove = signal.add_listener(wake)
    try:
        await asyncio.wait((work, aborted), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        work.cancel()
        PENDING.add(work)
        work.add_done_callback(late_cleanup(late))
        raise
    finally:
        remove()
        aborted.cancel()
    if signal_aborted(signal):
        PENDING.add(work)
        work.add_done_callback(late_cleanup(late))
        raise Step("EVALUATION_CANCELLED", "aborted")
    if work.cancelled():  # the work was cancelled by someone else, or raised CancelledError
        raise RuntimeError("the awaited work was cancelled")
    return work.result()


def abort_check(signal: AbortSignal) -> None:
    if signal_aborted(signal):
        raise Step("EVALUATION_CANCELLED", "aborted")
