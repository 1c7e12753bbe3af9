"""Test harness: every ``async def`` test runs on a fresh debug-mode event loop.

A test fails if, when its coroutine returns, any other task is still pending on its loop, or
if the loop's exception handler was called (an exception "never retrieved", a task destroyed
while pending, a failing callback). Warnings are errors (see pyproject.toml), and a garbage
collection after each test surfaces "coroutine ... was never awaited" inside that test.
Hypothesis runs a bounded number of examples; ``HYPOTHESIS_PROFILE=fuzz`` runs many more.
"""

from __future__ import annotations

import inspect
import os

import pytest
from hypothesis import settings

from support import run_async

settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile("fuzz", max_examples=2_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    function = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function):
        return None
    names = pyfuncitem._fixtureinfo.argnames  # pyright: ignore[reportPrivateUsage]
    run_async(function, **{name: pyfuncitem.funcargs[name] for name in names})
    return True
