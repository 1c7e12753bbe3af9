"""Helpers shared by the tests: the async runner that enforces the loop rules."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import os
import shutil
import subprocess
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NoReturn

from hypothesis import settings

from tether import EventStream, ModelChunk, ModelResponse

REPOSITORY: Final = Path(__file__).resolve().parent.parent
"""The repository's root (this file is ``tests/support.py``)."""

SHARED_ENV: Final = "TETHER_SHARED_DIR"
"""Names the workshop's shared folder (``spec/``, ``recorded/``) when it is not beside the
repository (``../shared``, as CI lays it out)."""


def debian_binary(binary: str, package: str) -> str | None:
    """The path of ``binary``, installing Debian's ``package`` first when it is missing and
    this runs as root with ``apt-get`` (as on CI); ``None`` when it cannot be had, so the
    test that needs it skips with a reason."""
    found = shutil.which(binary)
    if found is not None:
        return found
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(
            ["apt-get", "install", "-y", package],
            check=False,
            capture_output=True,
            timeout=300,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        return shutil.which(binary)
    return None


def shared_dir() -> Path:
    """The workshop's shared folder: ``$TETHER_SHARED_DIR``, else ``../shared`` beside the
    repository's root. Never an absolute path of one machine."""
    configured = os.environ.get(SHARED_ENV)
    return Path(configured) if configured else REPOSITORY.parent / "shared"


def recorded_streams(api: str) -> list[Path]:
    """The recorded vendor streams of ``api`` (``"openai-chat"``, ``"anthropic-messages"``)
    in the shared folder's ``recorded/``, sorted; empty when the folder is missing.

    They are replayed from there, never copied into this repository (their licences are
    beside them)."""
    folder = shared_dir() / "recorded"
    if not folder.is_dir():
        return []
    return [
        path
        for path in sorted(folder.glob("*.json"))
        if json.loads(path.read_text(encoding="utf-8")).get("api") == api
    ]


def missing_recordings() -> NoReturn:
    """What a recorded-stream test does when there are no recordings: a skip that names the
    folder (``-ra`` lists it), and under CI (``$CI`` set) a failure: the replays must run."""
    import pytest

    where = shared_dir() / "recorded"
    message = f"no recorded vendor streams in {where} (set {SHARED_ENV} to the shared folder)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


DEFAULT_EXAMPLES = 100
"""``max_examples`` of the default Hypothesis profile (tests/conftest.py)."""
FUZZ_EXAMPLES = 20 * DEFAULT_EXAMPLES
"""``max_examples`` of the ``fuzz`` profile (``HYPOTHESIS_PROFILE=fuzz``, ``make fuzz``)."""


def examples(count: int) -> int:
    """``max_examples`` for a property test that wants ``count`` examples in a default run.

    Under the loaded profile's budget the count scales with it: ``count`` under the default
    profile, and under a larger one (``fuzz``) ``count`` times the same factor, never less
    than that profile's own ``max_examples``, so ``make fuzz`` runs every such test at least
    at the full fuzz strength. Call it at decoration time (``@settings(max_examples=...)``),
    after tests/conftest.py loaded the profile.
    """
    budget = settings().max_examples
    scaled = max(1, count * budget // DEFAULT_EXAMPLES)
    return max(scaled, budget) if budget > DEFAULT_EXAMPLES else scaled


class LoopProblems(AssertionError):
    """An async test left tasks running or triggered the loop's exception handler."""


def run_async(test: Callable[..., Coroutine[Any, Any, Any]], /, **kwargs: Any) -> Any:
    """Run ``test(**kwargs)`` on a fresh debug loop and enforce the harness rules.

    The collection after the test must find what the test allocated and dropped (a coroutine
    never awaited, a pending task destroyed); everything alive before the run (the imported
    SDKs, every collected test item, Hypothesis' caches: some 100,000s of objects) cannot be
    part of that, yet a full ``gc.collect()`` traverses it all, which used to be most of the
    suite's wall time. So that heap is frozen for the run (``gc.freeze``: it is still alive,
    merely not traversed) and unfrozen afterwards, back into the oldest generation where the
    automatic collections see it again. Reference counting is untouched: an old object the
    test releases is still freed at once; only an old object in a cycle that becomes garbage
    during the run waits for a later collection.
    """
    reports: list[dict[str, Any]] = []
    gc.freeze()
    try:
        with asyncio.Runner(debug=True) as runner:
            loop = runner.get_loop()
            loop.set_exception_handler(lambda _loop, context: reports.append(context))
            outcome = runner.run(_checked(test, kwargs))
            gc.collect()
            runner.run(asyncio.sleep(0))
    finally:
        gc.unfreeze()
    if reports:
        details = "; ".join(str(report.get("message") or report) for report in reports)
        raise LoopProblems(f"event loop reported problems: {details}")
    return outcome


async def _checked(test: Callable[..., Coroutine[Any, Any, Any]], kwargs: dict[str, Any]) -> Any:
    outcome = await test(**kwargs)
    current = asyncio.current_task()
    leftovers = [task for task in asyncio.all_tasks() if task is not current]
    if leftovers:
        for task in leftovers:
            task.cancel()
        await asyncio.gather(*leftovers, return_exceptions=True)
        raise LoopProblems(f"test left {len(leftovers)} task(s) pending: {leftovers!r}")
    return outcome


@contextlib.contextmanager
def slow_callback_notes_off() -> Generator[None]:
    """Within a running test, stop the debug loop noting slow callbacks, and restore it after.

    The harness runs every test on a debug loop, which logs "Executing <Task ...> took 0.1
    seconds" for any callback slower than its ``slow_callback_duration``; pytest keeps each
    logged record until the test ends. A test that bounds the memory its runs keep
    (``tracemalloc``) would then count those records, whose number depends on the machine's
    load, not on the code: under a full suite beside other work, one such bound once saw
    159 KB kept against 64 KiB. Measured with the notes off, the bound is the code's alone.
    """
    loop = asyncio.get_running_loop()
    previous = loop.slow_callback_duration
    loop.slow_callback_duration = math.inf
    try:
        yield
    finally:
        loop.slow_callback_duration = previous


async def turns(count: int = 5) -> None:
    """Let the event loop run ``count`` times (zero-second yields, never a timed sleep)."""
    for _ in range(count):
        await asyncio.sleep(0)


async def settle(stream: EventStream[Any, Any], turns: int = 20) -> None:
    """Fail (rather than hang) unless the stream settles within a few loop turns."""
    for _ in range(turns):
        if stream.settled:
            return
        await asyncio.sleep(0)
    assert stream.settled, "the stream did not settle"


class Impostor:
    """A non-``str`` key that hashes like a real field name and claims to equal anything."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return True


ModelStream = EventStream[ModelChunk, ModelResponse]


@dataclass
class Outcome:
    """What a model stream delivered: its chunks, then a response or an error."""

    chunks: list[ModelChunk]
    response: ModelResponse | None
    error: BaseException | None


async def result_failure(stream: ModelStream, error: BaseException) -> BaseException:
    """Await ``result`` after iteration failed with ``error``; it must raise that same object."""
    failure: BaseException | None = None
    try:
        await stream.result
    except BaseException as again:
        failure = again
    assert failure is not None, "result succeeded although iteration failed"
    assert failure is error, "iteration and result failed with different objects"
    return error


async def consume(stream: ModelStream) -> Outcome:
    """Read every chunk, then the result; a failure must reach both the same way."""
    chunks: list[ModelChunk] = []
    try:
        async for chunk in stream:
            chunks.append(chunk)
    except BaseException as error:
        return Outcome(chunks, None, await result_failure(stream, error))
    return Outcome(chunks, await stream.result, None)


async def succeed(stream: ModelStream) -> tuple[list[ModelChunk], ModelResponse]:
    outcome = await consume(stream)
    assert outcome.error is None, f"stream failed: {outcome.error!r}"
    assert outcome.response is not None
    return outcome.chunks, outcome.response


async def fail(stream: ModelStream) -> tuple[list[ModelChunk], BaseException]:
    outcome = await consume(stream)
    assert outcome.error is not None, f"stream succeeded: {outcome.response!r}"
    return outcome.chunks, outcome.error


def plain_utf16_text(text: str, *, lone: str | None = None) -> str:
    """The reference the surrogate tests check against, a plain code point loop: each high
    surrogate followed by a low one joined into the character the pair spells (as JSON's
    ``\\ud83d\\ude00`` escapes read back), and each lone surrogate kept (``lone=None``) or
    replaced by ``lone`` (``"\\ufffd"``: what JavaScript's ``toWellFormed`` does)."""
    out: list[str] = []
    index = 0
    while index < len(text):
        point = ord(text[index])
        following = ord(text[index + 1]) if index + 1 < len(text) else 0
        if 0xD800 <= point <= 0xDBFF and 0xDC00 <= following <= 0xDFFF:
            out.append(chr(0x10000 + ((point - 0xD800) << 10) + (following - 0xDC00)))
            index += 2
            continue
        surrogate = 0xD800 <= point <= 0xDFFF
        out.append(lone if surrogate and lone is not None else text[index])
        index += 1
    return "".join(out)
