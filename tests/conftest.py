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

from support import DEFAULT_EXAMPLES, FUZZ_EXAMPLES, run_async

# A slow property test runs fewer examples by default with ``@settings(max_examples=examples(n))``
# (tests/support.py), which scales ``n`` up under ``fuzz``.
settings.register_profile("default", max_examples=DEFAULT_EXAMPLES, deadline=None)
settings.register_profile("fuzz", max_examples=FUZZ_EXAMPLES, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Child processes (the CLI tests) keep PYTHONDEVMODE but not asyncio's debug mode: its
# "Executing <Task ...> took 0.1 seconds" notes on stderr depend on the machine's load, not
# on the code. The tests' own loops are debug loops either way (tests/support.py).
os.environ.pop("PYTHONASYNCIODEBUG", None)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    function = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function):
        return None
    names = pyfuncitem._fixtureinfo.argnames  # pyright: ignore[reportPrivateUsage]
    run_async(function, **{name: pyfuncitem.funcargs[name] for name in names})
    return True


# -- Loopback servers for the provider tests (tests/servers/) ---------------------------------
# Appended after the harness, which is not edited; hence the late imports (E402).

from collections.abc import Iterator  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from pathlib import Path  # noqa: E402

from servers.katan import KatanFactory, KatanServer, KatanStartError, run_katan  # noqa: E402
from tmux_support import Tmux, tmux_binary  # noqa: E402


@pytest.fixture(scope="module")
def katan_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KatanServer]:
    """One real llm-katan per test module, default flags: echo backend, openai+anthropic,
    127.0.0.1, no failure injection, keys not validated (any ``Authorization: Bearer`` /
    ``x-api-key`` is accepted).

    Module-scoped because a start costs about half a second and, with no failure flags, the
    only state it keeps (a request counter) changes no answer. Tests that need flags
    (``--rate-limit-after``, ``--validate-keys``, ``--itl-ms``...) use ``katan_factory``.
    If llm-katan cannot start, the test fails with its stderr (never skips).
    """
    with ExitStack() as stack:
        try:
            server = stack.enter_context(run_katan(tmp_path_factory.mktemp("katan")))
        except KatanStartError as error:
            pytest.fail(str(error), pytrace=False)
        yield server


@pytest.fixture
def katan_factory(tmp_path: Path) -> Iterator[KatanFactory]:
    """Function-scoped: ``katan_factory("--rate-limit-after", "1")`` starts a fresh llm-katan
    with the default flags plus these and returns its ``KatanServer``; every instance started
    is stopped (SIGTERM, then SIGKILL) when the test ends, pass or fail."""
    with ExitStack() as stack:
        started: list[KatanServer] = []

        def start(*extra_args: str) -> KatanServer:
            workdir = tmp_path / f"katan-{len(started)}"
            try:
                server = stack.enter_context(run_katan(workdir, *extra_args))
            except KatanStartError as error:
                pytest.fail(str(error), pytrace=False)
            started.append(server)
            return server

        yield start


# --- a terminal for the tmux tests ---------------------------------------------------------------


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A tmux server of the test's own (skipped where tmux is missing and cannot be
    installed), killed after the test."""
    binary = tmux_binary()
    if binary is None:
        pytest.skip("tmux is not installed and cannot be (not root, or no apt-get)")
    terminal = Tmux(binary, tmp_path)
    try:
        yield terminal
    finally:
        terminal.kill()
