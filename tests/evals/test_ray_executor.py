"""``RayExecutor``: the same evaluation through Ray as through the local executor.

Two layers. The driver's scheduling (in order, at most ``concurrency`` in flight, the first
failure or the caller's abort cancels what is in flight and stops submitting, every submitted
item settles before ``execute`` returns) and Ray's start/stop are tested against a fake ``ray``
module that runs each "remote" call as a task on this loop, so every interleaving is decided
by the test. The worker side (``run_item``: a fresh loop, SIGINT aborting the run, cleanups
still running) is tested in this process. Then a real local Ray (``num_cpus=2``, started once
for the module: a start costs seconds on two cores) shows the integration: byte-identical
reports for the fixture suite and for an ``AgentCandidate`` on a scripted model, cancellation
reaching the workers with every cleanup run (marker files written by the workers), and the
same error code for a failing candidate both ways.

The classes a worker runs are defined here and shipped by value
(``cloudpickle.register_pickle_by_value``), so the workers need not import the tests.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import json
import logging
import os
import pickle
import signal
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (the tether[ray] extra)")

import tether.evals.ray_executor as ray_executor  # noqa: E402
from tether.abort import AbortController, AbortSignal  # noqa: E402
from tether.evals.candidates import AgentCandidate  # noqa: E402
from tether.evals.errors import EvaluationInfrastructureError  # noqa: E402
from tether.evals.executors import (  # noqa: E402
    EvaluationWorkItem,
    ExecutionResult,
    ItemOutcome,
    LocalExecutor,
)
from tether.evals.fixture_candidate import fixture_candidate  # noqa: E402
from tether.evals.judge import deterministic_judge  # noqa: E402
from tether.evals.ray_executor import RayExecutor, RayExecutorError, run_item  # noqa: E402
from tether.evals.report import serialize_evaluation_report  # noqa: E402
from tether.evals.runner import (  # noqa: E402
    EvaluationJob,
    LoopCleanupTimer,
    TemporaryWorkspaceFactory,
    ZeroClock,
    run_evaluation,
)
from tether.evals.tasks import load_evaluation_tasks  # noqa: E402
from tether.evals.types import (  # noqa: E402
    EvaluationFailed,
    EvaluationRunReport,
    EvaluationRuntimeInput,
    EvaluationWorkTask,
    ExpectedEvidence,
    RuntimeFactoryInput,
    WorkspaceFactoryInput,
)
from tether.models.scripted import ScriptedModel, text_reply  # noqa: E402

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]
SOURCE: dict[str, Any] = json.loads((ROOT / "fixtures" / "eval-tasks.json").read_text("utf-8"))
TASKS = load_evaluation_tasks(SOURCE)
BOUND = 120.0


# --- candidates and workspaces the workers run (shipped by value) ------------------------------


def answer_42() -> ScriptedModel:
    """A model that answers every prompt with "42" (a new one per run)."""
    return ScriptedModel([text_reply("4", "2")])


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkedWorkspace:
    path: str
    marker: str

    async def cleanup(self) -> None:
        await asyncio.to_thread(Path(self.marker).write_text, "cleaned", encoding="utf-8")


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkedWorkspaces:
    """A workspace per run, ``ws-<run>`` under ``root``; its cleanup writes ``cleaned-<run>``."""

    root: str

    def __call__(self, input: WorkspaceFactoryInput, /) -> MarkedWorkspace:
        path = Path(self.root) / f"ws-{input.run_id}"
        path.mkdir()
        return MarkedWorkspace(
            path=str(path), marker=str(Path(self.root) / f"cleaned-{input.run_id}")
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockingRuntime:
    """Tells the test it started (a TCP connection carrying its run ID, when ``port`` is
    set; a SIGINT to this process, when ``interrupt``), then waits for the run's signal."""

    run_id: str
    root: str
    port: int | None = None
    interrupt: bool = False

    async def run(self, input: EvaluationRuntimeInput, /) -> EvaluationFailed:
        aborted: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not aborted.done():
                aborted.set_result(None)

        remove = input.signal.add_listener(wake)
        try:
            if self.port is not None:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.write(self.run_id.encode())
                await writer.drain()
                writer.close()
                await writer.wait_closed()
            if self.interrupt:
                _thread.interrupt_main()  # what Ray's non-forced cancel does to a worker
            await aborted
        finally:
            remove()
        return EvaluationFailed(error_code="NEVER_REACHED")

    async def dispose(self) -> None:
        marker = Path(self.root) / f"disposed-{self.run_id}"
        await asyncio.to_thread(marker.write_text, "disposed", encoding="utf-8")


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockingCandidate:
    id: str = "blocking"
    root: str
    port: int | None = None
    interrupt: bool = False

    def create_runtime(self, input: RuntimeFactoryInput, /) -> BlockingRuntime:
        return BlockingRuntime(
            run_id=input.run_id, root=self.root, port=self.port, interrupt=self.interrupt
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class FailFirstCandidate:
    """The first run cannot get a runtime; the others block until cancelled."""

    id: str = "fail-first"
    root: str
    port: int | None = None

    def create_runtime(self, input: RuntimeFactoryInput, /) -> BlockingRuntime:
        if input.run_id == "run-000001":
            raise RuntimeError("no runtime for the first run")
        return BlockingRuntime(run_id=input.run_id, root=self.root, port=self.port)


@dataclass(frozen=True, slots=True)
class BrokenCandidate:
    id: str = "broken"

    def create_runtime(self, input: RuntimeFactoryInput, /) -> BlockingRuntime:
        raise RuntimeError("this candidate cannot build a runtime")


def job_for(candidate: Any, workspace_factory: Any = None) -> EvaluationJob:
    return EvaluationJob(
        candidate=candidate,
        candidate_id=candidate.id,
        judge=deterministic_judge,
        clock=ZeroClock(),
        workspace_factory=workspace_factory or TemporaryWorkspaceFactory(),
        cleanup_timeout_ms=1000,
        cleanup_timer=LoopCleanupTimer(),
    )


def item(index: int = 0, task: int = 0) -> EvaluationWorkItem:
    return EvaluationWorkItem(
        index=index,
        task=EvaluationWorkTask.of(TASKS[task]),
        run_id=f"run-{index + 1:06d}",
        repetition=1,
    )


# --- the worker side, in this process ----------------------------------------------------------


def test_run_item_runs_the_job_on_a_fresh_loop() -> None:
    outcome = run_item(job_for(fixture_candidate(TASKS)), item())

    assert outcome == EvaluationRunReport(
        task_id="held-out-arithmetic-pass",
        run_id="run-000001",
        candidate_id="fixture-candidate",
        verdict="pass",
        public_metrics={"matchedEvidence": 1.0, "requiredEvidence": 1.0},
        duration_ms=0.0,
        error_code=None,
    )


def test_a_sigint_cancels_the_run_and_its_cleanups_still_run(tmp_path: Path) -> None:
    previous = signal.getsignal(signal.SIGINT)
    job = job_for(
        BlockingCandidate(root=str(tmp_path), interrupt=True), MarkedWorkspaces(root=str(tmp_path))
    )

    outcome = run_item(job, item())

    assert isinstance(outcome, EvaluationInfrastructureError)
    assert (outcome.code, outcome.message) == ("EVALUATION_CANCELLED", "Evaluation was cancelled")
    assert sorted(os.listdir(tmp_path)) == [
        "cleaned-run-000001",
        "disposed-run-000001",
        "ws-run-000001",
    ]
    assert signal.getsignal(signal.SIGINT) is previous


def test_off_the_main_thread_no_handler_is_installed() -> None:
    previous = signal.getsignal(signal.SIGINT)
    with ThreadPoolExecutor(1) as pool:
        outcome = pool.submit(run_item, job_for(fixture_candidate(TASKS)), item(0, 1)).result()

    assert isinstance(outcome, EvaluationRunReport)
    assert outcome.verdict == "fail"
    assert signal.getsignal(signal.SIGINT) is previous


class _Unpicklable(Exception):
    def __reduce__(self) -> Any:
        raise TypeError("not picklable")


@dataclass(frozen=True, slots=True, kw_only=True)
class _RaisingJob:
    error: Exception

    async def run_one(self, item: EvaluationWorkItem, signal: AbortSignal) -> EvaluationRunReport:
        raise self.error


def test_an_error_travels_back_with_its_cause_when_it_pickles() -> None:
    cause = ValueError("why")
    error = EvaluationInfrastructureError("EVALUATION_JUDGE_FAILED", "Evaluation judge failed")
    error.__cause__ = cause

    outcome = run_item(cast(EvaluationJob, _RaisingJob(error=error)), item())

    assert outcome is error
    restored = pickle.loads(pickle.dumps(outcome))
    assert isinstance(restored.__cause__, ValueError)


def test_an_unpicklable_cause_is_dropped_and_the_code_kept() -> None:
    error = EvaluationInfrastructureError("EVALUATION_JUDGE_FAILED", "Evaluation judge failed")
    error.__cause__ = _Unpicklable()

    outcome = run_item(cast(EvaluationJob, _RaisingJob(error=error)), item())

    assert isinstance(outcome, EvaluationInfrastructureError)
    assert outcome is not error
    assert (outcome.code, outcome.message, outcome.__cause__) == (
        "EVALUATION_JUDGE_FAILED",
        "Evaluation judge failed",
        None,
    )
    pickle.dumps(outcome)


def test_an_untyped_failure_of_the_job_is_normalized() -> None:
    outcome = run_item(cast(EvaluationJob, _RaisingJob(error=KeyError("k"))), item())

    assert isinstance(outcome, EvaluationInfrastructureError)
    assert (outcome.code, outcome.message) == (
        "EVALUATION_RUNTIME_FAILED",
        "Evaluation infrastructure failed",
    )
    assert isinstance(outcome.__cause__, KeyError)


# --- the driver, against a fake ray -------------------------------------------------------------


class FakeRef:
    """A "remote" call: ``job.run_one`` as a task on this loop, with its own signal (which
    ``FakeRay.cancel`` aborts, as Ray's SIGINT does in ``run_item``)."""

    def __init__(self, ray: FakeRay, job: EvaluationJob, work: EvaluationWorkItem) -> None:
        self.item = work
        self.controller = AbortController()
        self.release = asyncio.Event()
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.task = asyncio.ensure_future(self._run(ray, job))

    async def _run(self, ray: FakeRay, job: EvaluationJob) -> None:
        ray.running += 1
        ray.peak = max(ray.peak, ray.running)
        ray.changed()
        try:
            if ray.gated:
                await self.release.wait()
            try:
                outcome: Any = await job.run_one(self.item, self.controller.signal)
            except EvaluationInfrastructureError as error:
                outcome = error
            self.future.set_result(outcome)
        finally:
            ray.running -= 1
            ray.changed()

    def as_future(self) -> asyncio.Future[Any]:
        return self.future


@dataclass
class FakeRay:
    """The parts of ``ray`` the executor uses; records what it was asked. ``gated``: each
    call waits for its ``release`` before it runs."""

    initialized: bool = True
    gated: bool = False
    submitted: list[FakeRef] = field(default_factory=list[FakeRef])
    cancels: list[tuple[str, bool, bool]] = field(default_factory=list[tuple[str, bool, bool]])
    calls: list[str] = field(default_factory=list[str])
    init_options: dict[str, Any] = field(default_factory=dict[str, Any])
    running: int = 0
    peak: int = 0
    on_init: Callable[[], None] | None = None
    waiters: list[asyncio.Future[None]] = field(default_factory=list[asyncio.Future[None]])

    def changed(self) -> None:
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (no polling) until ``condition()`` holds after a submission or a settle."""
        async with asyncio.timeout(BOUND):
            while not condition():
                waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self.waiters.append(waiter)
                await waiter

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **options: Any) -> None:
        self.calls.append("init")
        self.init_options = options
        if self.on_init is not None:
            self.on_init()

    def shutdown(self) -> None:
        self.calls.append("shutdown")

    def put(self, value: Any) -> Any:
        self.calls.append("put")
        return ("job", value)

    def cancel(self, ref: FakeRef, *, force: bool, recursive: bool) -> None:
        self.cancels.append((ref.item.run_id, force, recursive))
        if ref.future.done():
            raise ValueError("already finished")  # the executor must not care
        ref.controller.abort()
        ref.release.set()

    def remote_function(self) -> Any:
        def remote(job_ref: tuple[str, EvaluationJob], work: EvaluationWorkItem) -> FakeRef:
            ref = FakeRef(self, job_ref[1], work)
            self.submitted.append(ref)
            self.changed()
            return ref

        return SimpleNamespace(remote=remote)


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> FakeRay:
    fake = FakeRay()
    monkeypatch.setattr(ray_executor, "_ray", lambda: fake)
    monkeypatch.setattr(ray_executor, "_remote", fake.remote_function)
    return fake


@contextlib.asynccontextmanager
async def start_reports() -> AsyncGenerator[tuple[int, asyncio.Queue[str]], None]:
    """A loopback server on which each ``BlockingRuntime`` reports that it runs: yields its
    port and a queue of the run IDs, in the order they arrive."""
    started: asyncio.Queue[str] = asyncio.Queue()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()
        writer.close()
        await writer.wait_closed()
        started.put_nowait(data.decode())

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1]), started
    finally:
        server.close()
        await server.wait_closed()


async def next_run(started: asyncio.Queue[str]) -> str:
    async with asyncio.timeout(BOUND):
        return await started.get()


def work(count: int) -> tuple[EvaluationWorkItem, ...]:
    return tuple(item(index, index % 2) for index in range(count))


async def test_items_go_in_order_and_at_most_concurrency_at_once(fake_ray: FakeRay) -> None:
    fake_ray.gated = True
    settled: list[str] = []
    job = job_for(fixture_candidate(TASKS))
    execution = asyncio.ensure_future(
        RayExecutor().execute(
            job,
            work(5),
            concurrency=2,
            signal=AbortController().signal,
            on_settled=lambda done, outcome: settled.append(done.run_id),
        )
    )
    await fake_ray.until(lambda: len(fake_ray.submitted) == 2)
    for expected in range(5):
        assert len(fake_ray.submitted) == min(expected + 2, 5)  # two in flight, no more
        fake_ray.submitted[expected].release.set()
        await fake_ray.until(
            lambda expected=expected: (
                fake_ray.submitted[expected].future.done()
                and len(fake_ray.submitted) == min(expected + 3, 5)
            )
        )
    result = await execution

    assert [ref.item.run_id for ref in fake_ray.submitted] == [f"run-{n:06d}" for n in range(1, 6)]
    assert fake_ray.peak == 2
    assert settled == [f"run-{n:06d}" for n in range(1, 6)]
    assert [cast(EvaluationRunReport, o).verdict for o in result.outcomes] == [
        "pass",
        "fail",
        "pass",
        "fail",
        "pass",
    ]
    assert result.failure_order == ()
    assert fake_ray.calls == ["put"]  # Ray was running: neither started nor stopped
    assert fake_ray.cancels == []


async def test_the_first_failure_cancels_the_rest_and_stops_submitting(
    fake_ray: FakeRay, tmp_path: Path
) -> None:
    fake_ray.gated = True
    async with start_reports() as (port, started):
        candidate = FailFirstCandidate(root=str(tmp_path), port=port)
        job = job_for(candidate, MarkedWorkspaces(root=str(tmp_path)))
        execution = asyncio.ensure_future(
            RayExecutor().execute(job, work(4), concurrency=2, signal=AbortController().signal)
        )
        await fake_ray.until(lambda: fake_ray.running == 2)
        fake_ray.submitted[1].release.set()
        assert await next_run(started) == "run-000002"  # it runs, until cancelled
        fake_ray.submitted[0].release.set()  # the first fails
        result = await execution

    assert len(fake_ray.submitted) == 2  # nothing after the failure
    assert fake_ray.cancels == [("run-000002", False, True)]
    failure, cancelled, never, _ = result.outcomes
    assert isinstance(failure, EvaluationInfrastructureError)
    assert failure.code == "EVALUATION_RUNTIME_FACTORY_FAILED"
    assert isinstance(cancelled, EvaluationInfrastructureError)
    assert cancelled.code == "EVALUATION_CANCELLED"
    assert never is None
    assert result.failure_order == (0, 1)
    assert sorted(os.listdir(tmp_path)) == [
        "cleaned-run-000001",
        "cleaned-run-000002",
        "disposed-run-000002",
        "ws-run-000001",
        "ws-run-000002",
    ]


async def test_an_abort_cancels_in_flight_refs_and_waits_for_them(
    fake_ray: FakeRay, tmp_path: Path
) -> None:
    controller = AbortController()
    async with start_reports() as (port, started):
        candidate = BlockingCandidate(root=str(tmp_path), port=port)
        job = job_for(candidate, MarkedWorkspaces(root=str(tmp_path)))
        execution = asyncio.ensure_future(
            RayExecutor().execute(job, work(3), concurrency=2, signal=controller.signal)
        )
        assert {await next_run(started), await next_run(started)} == {"run-000001", "run-000002"}
        controller.abort()
        result = await execution

    assert sorted(fake_ray.cancels) == [("run-000001", False, True), ("run-000002", False, True)]
    assert [getattr(o, "code", None) for o in result.outcomes] == [
        "EVALUATION_CANCELLED",
        "EVALUATION_CANCELLED",
        None,
    ]
    assert result.outcomes[2] is None
    assert len(fake_ray.submitted) == 2
    assert sorted(os.listdir(tmp_path)) == [
        "cleaned-run-000001",
        "cleaned-run-000002",
        "disposed-run-000001",
        "disposed-run-000002",
        "ws-run-000001",
        "ws-run-000002",
    ]


async def test_cancelling_execute_cancels_the_refs_then_reraises(
    fake_ray: FakeRay, tmp_path: Path
) -> None:
    async with start_reports() as (port, started):
        candidate = BlockingCandidate(root=str(tmp_path), port=port)
        job = job_for(candidate, MarkedWorkspaces(root=str(tmp_path)))
        execution = asyncio.ensure_future(
            RayExecutor().execute(job, work(2), concurrency=2, signal=AbortController().signal)
        )
        assert {await next_run(started), await next_run(started)} == {"run-000001", "run-000002"}
        execution.cancel()
        with pytest.raises(asyncio.CancelledError):
            await execution

    assert sorted(fake_ray.cancels) == [("run-000001", False, True), ("run-000002", False, True)]
    assert fake_ray.running == 0
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith("cleaned-")) == [
        "cleaned-run-000001",
        "cleaned-run-000002",
    ]


async def test_an_on_settled_that_raises_is_a_failure(fake_ray: FakeRay) -> None:
    def explode(done: EvaluationWorkItem, outcome: ItemOutcome) -> None:
        raise RuntimeError("progress failed")

    result = await RayExecutor().execute(
        job_for(fixture_candidate(TASKS)),
        work(1),
        concurrency=1,
        signal=AbortController().signal,
        on_settled=explode,
    )

    (outcome,) = result.outcomes
    assert isinstance(outcome, EvaluationInfrastructureError)
    assert outcome.code == "EVALUATION_RUNTIME_FAILED"
    assert isinstance(outcome.__cause__, RuntimeError)
    assert result.failure_order == (0,)


async def test_nothing_to_run_never_touches_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden() -> Any:
        raise AssertionError("ray was used")

    monkeypatch.setattr(ray_executor, "_ray", forbidden)
    controller = AbortController()
    job = job_for(fixture_candidate(TASKS))

    empty = await RayExecutor().execute(job, (), concurrency=1, signal=controller.signal)
    controller.abort()
    aborted = await RayExecutor().execute(job, work(2), concurrency=1, signal=controller.signal)

    assert empty == ExecutionResult(outcomes=(), failure_order=())
    assert aborted == ExecutionResult(outcomes=(None, None), failure_order=())


async def test_it_starts_ray_when_needed_and_stops_what_it_started(fake_ray: FakeRay) -> None:
    fake_ray.initialized = False
    result = await RayExecutor(address="ray://head:10001", num_cpus=2).execute(
        job_for(fixture_candidate(TASKS)), work(1), concurrency=1, signal=AbortController().signal
    )

    assert isinstance(result.outcomes[0], EvaluationRunReport)
    assert fake_ray.calls == ["init", "put", "shutdown"]
    assert fake_ray.init_options == {
        "address": "ray://head:10001",
        "num_cpus": 2,
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
    }
    fake_ray.calls.clear()
    await RayExecutor().execute(
        job_for(fixture_candidate(TASKS)), work(1), concurrency=1, signal=AbortController().signal
    )
    assert fake_ray.calls == ["init", "put", "shutdown"]
    assert "num_cpus" not in fake_ray.init_options
    assert fake_ray.init_options["address"] is None


@pytest.mark.parametrize("joining", [None, "10.0.0.1:6379"])
async def test_ray_that_cannot_start_or_join_is_a_recognisable_failure(
    fake_ray: FakeRay, joining: str | None
) -> None:
    fake_ray.initialized = False
    refused = ConnectionError("Could not connect to the Ray cluster")

    def on_init() -> None:
        raise refused

    fake_ray.on_init = on_init
    with pytest.raises(RayExecutorError) as caught:
        await run_evaluation(
            candidate=fixture_candidate(TASKS), tasks=TASKS, executor=RayExecutor(address=joining)
        )

    error = caught.value
    assert (error.code, error.stage, error.message) == (
        "EVALUATION_RUNTIME_FAILED",
        "start",
        "Evaluation infrastructure failed: Ray could not be started or joined",
    )
    assert error.__cause__ is refused
    assert fake_ray.calls == ["init", "shutdown"]
    assert fake_ray.submitted == []


async def test_a_job_ray_will_not_take_is_a_recognisable_failure(fake_ray: FakeRay) -> None:
    refused = TypeError("cannot pickle '_thread.lock' object")

    def put(value: Any) -> Any:
        fake_ray.calls.append("put")
        raise refused

    fake_ray.put = put
    with pytest.raises(RayExecutorError) as caught:
        await run_evaluation(
            candidate=fixture_candidate(TASKS), tasks=TASKS, executor=RayExecutor()
        )

    error = caught.value
    assert (error.code, error.stage, error.message) == (
        "EVALUATION_RUNTIME_FAILED",
        "put",
        "Evaluation infrastructure failed: the evaluation job could not be put in Ray",
    )
    assert error.__cause__ is refused
    assert fake_ray.calls == ["put"]  # a Ray the caller started is left running
    assert fake_ray.submitted == []
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.code, copy.stage) == (RayExecutorError, error.code, "put")


async def test_the_fixture_only_fields_never_travel_to_a_worker(fake_ray: FakeRay) -> None:
    source = {
        "schemaVersion": 1,
        "tasks": [
            {
                "id": "secret-task",
                "split": "held-out",
                "prompt": "p",
                "expectedPublicEvidence": {"includes": ["required"]},
                "candidatePublicEvidence": ["ORACLE-ANSWER-7f3a"],
                "expectedVerdict": "fail",
            }
        ],
    }
    report = await run_evaluation(
        candidate=fixture_candidate(source), tasks=source, executor=RayExecutor(), repetitions=2
    )

    assert [run.verdict for run in report.runs] == ["fail", "fail"]
    shipped = [ref.item for ref in fake_ray.submitted]
    assert [type(work.task) for work in shipped] == [EvaluationWorkTask, EvaluationWorkTask]
    assert shipped[0].task == EvaluationWorkTask(
        id="secret-task",
        prompt="p",
        expected_public_evidence=ExpectedEvidence(includes=("required",)),
    )
    for work in shipped:
        data = pickle.dumps(work)
        assert b"ORACLE-ANSWER-7f3a" not in data
        assert b"expected_verdict" not in data
        assert b"candidate_public_evidence" not in data


async def test_a_cancel_while_ray_starts_waits_for_the_start_then_stops_it(
    fake_ray: FakeRay,
) -> None:
    fake_ray.initialized = False
    loop = asyncio.get_running_loop()
    entered: asyncio.Future[None] = loop.create_future()
    proceed = threading.Event()

    def on_init() -> None:
        loop.call_soon_threadsafe(entered.set_result, None)
        proceed.wait(BOUND)

    fake_ray.on_init = on_init
    execution = asyncio.ensure_future(
        RayExecutor().execute(
            job_for(fixture_candidate(TASKS)),
            work(1),
            concurrency=1,
            signal=AbortController().signal,
        )
    )
    await entered
    execution.cancel()
    await asyncio.sleep(0)
    assert not execution.done()  # still waiting for the start
    proceed.set()
    with pytest.raises(asyncio.CancelledError):
        await execution

    assert fake_ray.calls == ["init", "shutdown"]


def test_options_are_checked_and_shown() -> None:
    assert repr(RayExecutor("auto", 4)) == "RayExecutor(address='auto', num_cpus=4)"
    executor = RayExecutor()
    assert (executor.address, executor.num_cpus) == (None, None)
    with pytest.raises(TypeError, match="address"):
        RayExecutor("")
    with pytest.raises(TypeError, match="num_cpus"):
        RayExecutor(num_cpus=0)
    with pytest.raises(TypeError, match="num_cpus"):
        RayExecutor(num_cpus=cast(int, 1.5))


async def test_ray_failures_become_outcomes() -> None:
    from ray.exceptions import TaskCancelledError

    loop = asyncio.get_running_loop()

    def settled(value: Any = None, error: BaseException | None = None) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = loop.create_future()
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)
        return future

    cancelled: asyncio.Future[Any] = loop.create_future()
    cancelled.cancel()
    outcome_of = ray_executor._outcome_of  # pyright: ignore[reportPrivateUsage]

    assert cast(Any, outcome_of(settled(error=TaskCancelledError()))).code == "EVALUATION_CANCELLED"
    assert cast(Any, outcome_of(cancelled)).code == "EVALUATION_CANCELLED"
    crashed = outcome_of(settled(error=RuntimeError("worker died")))
    assert isinstance(crashed, EvaluationInfrastructureError)
    assert crashed.code == "EVALUATION_RUNTIME_FAILED"
    assert isinstance(crashed.__cause__, RuntimeError)
    odd = outcome_of(settled("not an outcome"))
    assert cast(Any, odd).code == "EVALUATION_RUNTIME_FAILED"


# --- a real local Ray ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    module = sys.modules[__name__]
    ray.cloudpickle.register_pickle_by_value(module)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield
    finally:
        ray.shutdown()
        ray.cloudpickle.unregister_pickle_by_value(module)


@pytest.mark.parametrize(
    "candidate",
    [
        fixture_candidate(TASKS),
        AgentCandidate(id="scripted-agent", model_spec="scripted/42", model_factory=answer_42),
    ],
    ids=["fixture", "agent"],
)
async def test_local_and_ray_reports_are_byte_identical(ray_session: None, candidate: Any) -> None:
    reports: list[str] = []
    progress: list[list[str]] = []
    for executor in (LocalExecutor(), RayExecutor()):
        seen: list[str] = []
        report = await run_evaluation(
            candidate=candidate,
            tasks=SOURCE,
            repetitions=3,
            concurrency=2,
            executor=executor,
            on_run=lambda outcome, seen=seen: seen.append(
                cast(EvaluationRunReport, outcome).run_id
            ),
        )
        reports.append(serialize_evaluation_report(report))
        progress.append(sorted(seen))

    assert reports[0] == reports[1]
    assert progress[0] == progress[1] == [f"run-{n:06d}" for n in range(1, 7)]
    parsed = json.loads(reports[1])
    assert [run["verdict"] for run in parsed["runs"]] == ["pass"] * 3 + ["fail"] * 3
    assert ray.is_initialized()  # the session's Ray was left running


async def test_a_cancel_reaches_the_workers_and_their_cleanups_run(
    ray_session: None, tmp_path: Path
) -> None:
    controller = AbortController()
    async with start_reports() as (port, started):
        evaluation = asyncio.ensure_future(
            run_evaluation(
                candidate=BlockingCandidate(root=str(tmp_path), port=port),
                tasks=SOURCE,
                repetitions=2,
                concurrency=2,
                signal=controller.signal,
                workspace_factory=MarkedWorkspaces(root=str(tmp_path)),
                executor=RayExecutor(),
            )
        )
        assert {await next_run(started), await next_run(started)} == {"run-000001", "run-000002"}
        controller.abort()
        with pytest.raises(EvaluationInfrastructureError) as caught:
            async with asyncio.timeout(BOUND):
                await evaluation

    assert caught.value.code == "EVALUATION_CANCELLED"
    # Both running workers were interrupted, not killed: dispose and cleanup ran there; the
    # two items never submitted left nothing.
    assert sorted(os.listdir(tmp_path)) == [
        "cleaned-run-000001",
        "cleaned-run-000002",
        "disposed-run-000001",
        "disposed-run-000002",
        "ws-run-000001",
        "ws-run-000002",
    ]


async def test_a_failing_candidate_fails_the_same_way_on_both(ray_session: None) -> None:
    failures: list[tuple[str, str]] = []
    for executor in (LocalExecutor(), RayExecutor()):
        with pytest.raises(EvaluationInfrastructureError) as caught:
            await run_evaluation(
                candidate=BrokenCandidate(),
                tasks=SOURCE,
                repetitions=2,
                concurrency=2,
                executor=executor,
            )
        failures.append((caught.value.code, caught.value.message))

    assert failures[0] == failures[1]
    assert failures[0][0] == "EVALUATION_RUNTIME_FACTORY_FAILED"
