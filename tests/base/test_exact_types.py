"""One awaitable rule for all of tether (``tether._base.exact_types.is_awaitable``), and
``await_steps``.

A value is awaitable when Python's ``await`` would take it: a coroutine, a generator-based
coroutine (``types.coroutine``), or a value whose class (read with ``type()``, never
``__class__``) defines ``__await__`` anywhere in its MRO, unless the first definition found is
``None``. That is ``inspect.isawaitable`` without the ``__class__`` lookup an impostor could
fake; an ``__await__`` that is a property (or any other descriptor) counts, as it does for
``await``, and ``await_steps`` binds it the way ``await`` does, so a property that raises
raises its own error.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import types
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tether
from tether import AbortController
from tether._async.race import race
from tether._base.exact_types import await_steps, is_awaitable

# The modules that decide whether to await caller code: each must use the one rule (the
# compaction summarizer and the runtime's ledger adopt through tether._async.adoption).
_USERS = (
    "tether._async.adoption",
    "tether._async.race",
    "tether.agent.agent._subscribers",
    "tether.agent.extensions._scope",
    "tether.evals.runner._job",
    "tether.evals.runner._settle",
    "tether.loop.hooks",
    "tether.loop._model_turn",
    "tether.models.base",
    "tether.tools.execution",
)


def _steps() -> Generator[Any, Any, str]:
    yield None
    return "stepped"


class _AwaitRaises:
    @property
    def __await__(self) -> Callable[[], Any]:
        raise RuntimeError("await refused")


def test_every_module_that_awaits_caller_code_uses_the_one_rule() -> None:
    for name in _USERS:
        module = importlib.import_module(name)
        assert module.__dict__.get("is_awaitable") is is_awaitable, name
    package = Path(tether.__file__).parent
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert "isawaitable(" not in source, path
        assert "def is_awaitable" not in source or path.name == "exact_types.py", path


def test_a_property_await_is_awaitable_as_python_says() -> None:
    value = _AwaitRaises()
    assert inspect.isawaitable(value)
    assert is_awaitable(value)
    with pytest.raises(RuntimeError, match="await refused"):
        await_steps(value)


def test_none_hides_an_inherited_await_and_plain_values_are_not_awaitable() -> None:
    class Base:
        def __await__(self) -> Generator[Any, Any, str]:
            return _steps()

    class Hidden(Base):
        __await__ = None  # pyright: ignore[reportAssignmentType]

    assert is_awaitable(Base())
    assert not is_awaitable(Hidden())
    assert not inspect.isawaitable(Hidden())
    for plain in (42, "x", None, object(), _steps(), [1]):
        assert not is_awaitable(plain)


async def test_coroutines_futures_and_generator_coroutines_are_awaitable() -> None:
    coroutine = asyncio.sleep(0)
    future = asyncio.get_running_loop().create_future()
    stepper: Any = types.coroutine(_steps)()
    try:
        assert all(is_awaitable(value) for value in (coroutine, future, stepper))
        assert await_steps(coroutine) is coroutine
        assert await_steps(stepper) is stepper
    finally:
        coroutine.close()
        stepper.close()
        future.cancel()


def test_an_impostor_faking_its_class_is_not_awaitable_and_runs_nothing() -> None:
    ran: list[str] = []

    class Impostor:
        @property
        def __class__(self) -> type[Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
            ran.append("__class__")
            return asyncio.Future

        def __getattr__(self, name: str) -> object:
            ran.append(name)
            raise AttributeError(name)

    value = Impostor()
    assert not is_awaitable(value)
    assert ran == []


def test_a_hostile_metaclass_cannot_fake_the_mro() -> None:
    class Meta(type):
        def mro(cls) -> list[type]:
            return [cls, object]

        def __getattribute__(cls, name: str) -> Any:
            raise AssertionError(f"read {name}")

    class Plain(metaclass=Meta):
        pass

    assert not is_awaitable(Plain())


async def test_race_awaits_a_property_await_as_await_does() -> None:
    with pytest.raises(RuntimeError, match="await refused"):
        await race(AbortController().signal, _AwaitRaises())  # pyright: ignore[reportArgumentType]


_KINDS = st.sampled_from(["absent", "function", "property", "none", "static"])


def _await_function(self: object) -> Generator[Any, Any, str]:
    return _steps()


def _await_getter(self: object) -> Callable[[], Generator[Any, Any, str]]:
    return _steps


def _class_chain(kinds: list[str]) -> type[Any]:
    """Classes nested base first, each defining ``__await__`` as ``kinds`` says."""
    base: type[Any] = object
    for index, kind in enumerate(kinds):
        namespace: dict[str, object] = {}
        if kind == "function":
            namespace["__await__"] = _await_function
        elif kind == "property":
            namespace["__await__"] = property(_await_getter)
        elif kind == "none":
            namespace["__await__"] = None
        elif kind == "static":
            namespace["__await__"] = staticmethod(_steps)
        base = type(f"Level{index}", (base,), namespace)
    return base


@given(st.lists(_KINDS, min_size=1, max_size=4))
def test_the_rule_agrees_with_inspect_for_any_class_chain(kinds: list[str]) -> None:
    value = _class_chain(kinds)()
    assert is_awaitable(value) == inspect.isawaitable(value)
    if is_awaitable(value):
        steps = await_steps(value)
        try:
            assert next(steps) is None
        finally:
            steps.close()


def test_the_generator_coroutine_flag_is_inspects() -> None:
    from tether._base import exact_types as _types

    assert _types._ITERABLE_COROUTINE == inspect.CO_ITERABLE_COROUTINE  # pyright: ignore[reportPrivateUsage]


class _Text(str):
    __slots__ = ()


class _FakeClass:
    @property
    def __class__(self) -> type[Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return str


@given(st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.lists(st.integers())))
def test_exactly_is_the_real_class_itself(value: object) -> None:
    from tether._base.exact_types import exactly

    for kind in (str, int, bool, type(None), list):
        assert exactly(value, kind) is (type(value) is kind)


def test_exactly_refuses_subclasses_and_faked_classes() -> None:
    from tether._base.exact_types import exactly

    assert not exactly(_Text("x"), str)
    assert not exactly(True, int)  # bool is an int subclass
    assert not exactly(_FakeClass(), str)
    assert isinstance(_FakeClass(), str)  # what isinstance would have believed
    text: object = "x"
    if exactly(text, str):
        assert text.upper() == "X"  # narrowed: no cast needed
