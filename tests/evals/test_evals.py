"""``tether.evals`` runner (checkpoint 14): option capture, one run, cleanup, the outcome.

Every wait is coordinated with events and futures; cleanup timeouts use a fake timer that the
test fires by hand, so nothing here sleeps.
"""

# Tests inspect real temp directories synchronously on purpose.
# ruff: noqa: ASYNC240

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import pickle
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from tether.abort import AbortController, AbortSignal
from tether.evals import (
    EVALUATION_ERROR_CODES,
    EvaluationCleanupErrors,
    EvaluationCompleted,
    EvaluationFailed,
    EvaluationInfrastructureError,
    EvaluationJob,
    EvaluationReport,
    EvaluationRunReport,
    EvaluationRuntimeInput,
    EvaluationTask,
    EvaluationWorkItem,
    EvaluationWorkTask,
    ExecutionResult,
    ExpectedEvidence,
    JudgeInput,
    JudgeOutput,
    LocalExecutor,
    LoopCleanupTimer,
    MonotonicClock,
    PublicMetrics,
    RuntimeFactoryInput,
    TemporaryWorkspaceFactory,
    WorkspaceFactoryInput,
    ZeroClock,
    deterministic_judge,
    fixture_candidate,
    load_evaluation_tasks,
    run_evaluation,
    serialize_evaluation_report,
)
from tether.evals.runner import work_items

FIXTURE_PATH = Path(__file__).resolve().parents[2] / "fixtures" / "eval-tasks.json"


def fixture_source() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE_PATH.read_text(encoding="utf-8"))
    return data


def make_source(count: int = 1, *, evidence: tuple[str, ...] = ("42",)) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "tasks": [
            {
                "id": f"task-{index}",
                "split": "held-out",
                "prompt": f"prompt {index}",
                "expectedPublicEvidence": {"includes": list(evidence)},
                "candidatePublicEvidence": list(evidence),
                "expectedVerdict": "pass",
            }
            for index in range(count)
        ],
    }


# -- Scripted parts -----------------------------------------------------------------------------


@dataclass
class Probe:
    """Everything the scripted parts saw and did, in order."""

    log: list[str] = field(default_factory=list[str])
    workspace_inputs: list[WorkspaceFactoryInput] = field(
        default_factory=list[WorkspaceFactoryInput]
    )
    factory_inputs: list[RuntimeFactoryInput] = field(default_factory=list[RuntimeFactoryInput])
    run_inputs: list[EvaluationRuntimeInput] = field(default_factory=list[EvaluationRuntimeInput])
    judge_inputs: list[JudgeInput] = field(default_factory=list[JudgeInput])


class Workspace:
    def __init__(
        self,
        probe: Probe,
        path: Any,
        *,
        error: Exception | None = None,
        gate: asyncio.Future[None] | None = None,
    ) -> None:
        self.probe = probe
        self.path = path
        self.error = error
        self.gate = gate

    async def cleanup(self) -> None:
        self.probe.log.append(f"cleanup {self.path}")
        if self.gate is not None:
            await self.gate
        if self.error is not None:
            raise self.error


Behaviour = Callable[[EvaluationRuntimeInput], Awaitable[object]]


async def answer_42(_input: EvaluationRuntimeInput) -> object:
    return EvaluationCompleted(public_evidence=("42",))


class Runtime:
    def __init__(
        self, probe: Probe, name: str, behaviour: Behaviour, dispose_error: Exception | None
    ) -> None:
        self.probe = probe
        self.name = name
        self.behaviour = behaviour
        self.dispose_error = dispose_error

    async def run(self, input: EvaluationRuntimeInput) -> Any:
        self.probe.log.append(f"run {self.name}")
        self.probe.run_inputs.append(input)
        return await self.behaviour(input)

    def dispose(self) -> None:
        self.probe.log.append(f"dispose {self.name}")
        if self.dispose_error is not None:
            raise self.dispose_error


class Candidate:
    """A candidate whose runtimes follow ``behaviour`` (per run ID if a dict)."""

    def __init__(
        self,
        probe: Probe,
        behaviour: Behaviour | dict[str, Behaviour] = answer_42,
        *,
        id: str = "candidate-a",
        dispose_errors: dict[str, Exception] | None = None,
        factory_error: Exception | None = None,
    ) -> None:
        self.id = id
        self.probe = probe
        if isinstance(behaviour, dict):
            self.by_run = cast("dict[str, Behaviour]", behaviour)
            self.default: Behaviour = answer_42
        else:
            self.by_run = {}
            self.default = behaviour
        self.dispose_errors = dispose_errors or {}
        self.factory_error = factory_error

    def create_runtime(self, input: RuntimeFactoryInput) -> Runtime:
        self.probe.factory_inputs.append(input)
        self.probe.log.append(f"create {input.run_id}")
        if self.factory_error is not None:
            raise self.factory_error
        behaviour = self.by_run.get(input.run_id, self.default)
        return Runtime(self.probe, input.run_id, behaviour, self.dispose_errors.get(input.run_id))


class Workspaces:
    def __init__(
        self,
        probe: Probe,
        *,
        errors: dict[str, Exception] | None = None,
        gates: dict[str, asyncio.Future[None]] | None = None,
    ) -> None:
        self.probe = probe
        self.errors = errors or {}
        self.gates = gates or {}

    def __call__(self, input: WorkspaceFactoryInput) -> Workspace:
        self.probe.workspace_inputs.append(input)
        self.probe.log.append(f"workspace {input.run_id}")
        return Workspace(
            self.probe,
            f"/ws/{input.run_id}",
            error=self.errors.get(input.run_id),
            gate=self.gates.get(input.run_id),
        )


@dataclass
class Scheduled:
    delay_ms: int
    on_timeout: Callable[[], None]
    cancelled: int = 0


class FakeTimer:
    """A cleanup timer the test fires by hand."""

    def __init__(self) -> None:
        self.scheduled: list[Scheduled] = []
        self.changed = asyncio.Event()

    def schedule(self, delay_ms: int, on_timeout: Callable[[], None]) -> Callable[[], None]:
        entry = Scheduled(delay_ms, on_timeout)
        self.scheduled.append(entry)
        self.changed.set()

        def cancel() -> None:
            entry.cancelled += 1

        return cancel

    async def wait_for(self, count: int) -> None:
        while len(self.scheduled) < count:
            self.changed.clear()
            await self.changed.wait()


async def evaluate(
    probe: Probe, candidate: object, source: object, **options: Any
) -> EvaluationReport:
    options.setdefault("workspace_factory", Workspaces(probe))
    return await run_evaluation(candidate=candidate, tasks=source, **options)


async def failure(awaitable: Awaitable[object]) -> EvaluationInfrastructureError:
    with pytest.raises(EvaluationInfrastructureError) as caught:
        await awaitable
    return caught.value


# -- The fixture, end to end --------------------------------------------------------------------

FIXTURE_REPORT = (
    '{"candidateId":"fixture-candidate","runs":['
    '{"taskId":"held-out-arithmetic-pass","runId":"run-000001","candidateId":"fixture-candidate",'
    '"verdict":"pass","publicMetrics":{"matchedEvidence":1,"requiredEvidence":1},'
    '"durationMs":0,"errorCode":null},'
    '{"taskId":"held-out-arithmetic-fail","runId":"run-000002","candidateId":"fixture-candidate",'
    '"verdict":"fail","publicMetrics":{"matchedEvidence":0,"requiredEvidence":1},'
    '"durationMs":0,"errorCode":null}],'
    '"publicMetrics":{"totalRuns":2,"passedRuns":1,"failedRuns":1,"errorRuns":0,'
    '"passRate":0.5,"failRate":0.5,"errorRate":0}}'
)


async def test_fixture_candidate_gives_one_pass_and_one_fail() -> None:
    source = fixture_source()
    tasks = load_evaluation_tasks(source)
    report = await run_evaluation(candidate=fixture_candidate(tasks), tasks=source)
    assert [run.verdict for run in report.runs] == [task.expected_verdict for task in tasks]
    assert serialize_evaluation_report(report) == FIXTURE_REPORT
    assert report.public_metrics.pass_rate == 0.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.candidate_id = "other"  # type: ignore[misc]


async def test_fixture_candidate_from_raw_source_and_loaded_tasks_agree() -> None:
    source = fixture_source()
    tasks = load_evaluation_tasks(source)
    first = await run_evaluation(candidate=fixture_candidate(source), tasks=tasks)
    second = await run_evaluation(candidate=fixture_candidate(list(tasks)), tasks=list(tasks))
    assert first == second
    assert serialize_evaluation_report(first) == FIXTURE_REPORT


async def test_fixture_candidate_reports_unknown_tasks_as_error_runs() -> None:
    other = load_evaluation_tasks(make_source(1))
    report = await run_evaluation(candidate=fixture_candidate(fixture_source()), tasks=other)
    assert report.runs[0].verdict == "error"
    assert report.runs[0].error_code == "UNKNOWN_TASK"
    assert report.public_metrics.error_rate == 1


async def test_default_workspace_is_a_real_directory_removed_after_the_run() -> None:
    seen: list[str] = []

    async def inspect_workspace(input: EvaluationRuntimeInput) -> object:
        return EvaluationCompleted(public_evidence=("42",))

    class Recording(Candidate):
        def create_runtime(self, input: RuntimeFactoryInput) -> Runtime:
            assert os.path.isdir(input.workspace_path)
            Path(input.workspace_path, "scratch.txt").write_text("data", encoding="utf-8")
            seen.append(input.workspace_path)
            return super().create_runtime(input)

    probe = Probe()
    report = await run_evaluation(
        candidate=Recording(probe, inspect_workspace), tasks=make_source(2), concurrency=2
    )
    assert len(seen) == 2
    assert seen[0] != seen[1]
    assert all(not os.path.exists(path) for path in seen)
    assert [run.verdict for run in report.runs] == ["pass", "pass"]


async def test_workspace_gone_before_cleanup_is_fine() -> None:
    workspace = TemporaryWorkspaceFactory()(
        WorkspaceFactoryInput(
            candidate_id="c", task_id="t", run_id="run-000001", repetition=1, signal=AbortSignal()
        )
    )
    os.rmdir(workspace.path)
    await workspace.cleanup()
    assert not os.path.exists(workspace.path)


# -- Work items, run IDs, concurrency -----------------------------------------------------------


ORACLE_SOURCE: dict[str, Any] = {
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


def test_work_items_carry_only_what_a_run_needs() -> None:
    tasks = load_evaluation_tasks(ORACLE_SOURCE)
    (item,) = work_items(tasks, 1)
    assert item.task == EvaluationWorkTask(
        id="secret-task",
        prompt="p",
        expected_public_evidence=ExpectedEvidence(includes=("required",)),
    )
    assert [f.name for f in dataclasses.fields(EvaluationWorkTask)] == [
        "id",
        "prompt",
        "expected_public_evidence",
    ]
    data = pickle.dumps(item)
    assert b"ORACLE-ANSWER-7f3a" not in data
    assert b"expected_verdict" not in data


async def test_the_frames_of_a_run_hold_no_fixture_only_field() -> None:
    found: list[str] = []

    class Snoop:
        """Trusted code may walk the interpreter; the run itself holds no oracle to find."""

        def dispose(self) -> None:
            pass

        async def run(self, input: EvaluationRuntimeInput) -> object:
            for task in asyncio.all_tasks():
                coroutine: Any = task.get_coro()
                while coroutine is not None:
                    frame = getattr(coroutine, "cr_frame", None)
                    if frame is not None:
                        for value in frame.f_locals.values():
                            held = getattr(value, "task", value)
                            if isinstance(held, EvaluationTask):
                                found.append(f"{frame.f_code.co_name}: {held.id}")
                    coroutine = getattr(coroutine, "cr_await", None)
            return EvaluationCompleted(public_evidence=("required",))

    class Snooping:
        id = "snoop"

        def create_runtime(self, input: RuntimeFactoryInput) -> Snoop:
            return Snoop()

    report = await run_evaluation(candidate=Snooping(), tasks=ORACLE_SOURCE)
    assert report.runs[0].verdict == "pass"
    assert found == []


def test_work_items_follow_fixture_order_then_repetitions() -> None:
    tasks = load_evaluation_tasks(make_source(2))
    items = work_items(tasks, 3)
    assert [(item.index, item.task.id, item.repetition, item.run_id) for item in items] == [
        (0, "task-0", 1, "run-000001"),
        (1, "task-0", 2, "run-000002"),
        (2, "task-0", 3, "run-000003"),
        (3, "task-1", 1, "run-000004"),
        (4, "task-1", 2, "run-000005"),
        (5, "task-1", 3, "run-000006"),
    ]


async def test_concurrent_runs_keep_work_order_and_bounded_parallelism() -> None:
    probe = Probe()
    active = 0
    peak = 0
    release = asyncio.get_running_loop().create_future()
    both_running = asyncio.Event()

    async def behaviour(input: EvaluationRuntimeInput) -> object:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        if active == 2:
            both_running.set()
        await release
        active -= 1
        return EvaluationCompleted(public_evidence=("42",))

    task = asyncio.ensure_future(
        evaluate(probe, Candidate(probe, behaviour), make_source(3), repetitions=2, concurrency=2)
    )
    await both_running.wait()
    assert len(probe.factory_inputs) == 2  # the third item waits for a free worker
    release.set_result(None)
    report = await task
    assert peak == 2
    assert [run.run_id for run in report.runs] == [f"run-{n:06d}" for n in range(1, 7)]
    assert [run.task_id for run in report.runs] == [
        "task-0", "task-0", "task-1", "task-1", "task-2", "task-2",
    ]  # fmt: skip
    assert sorted((i.task_id, i.repetition) for i in probe.factory_inputs) == [
        ("task-0", 1), ("task-0", 2), ("task-1", 1), ("task-1", 2), ("task-2", 1), ("task-2", 2),
    ]  # fmt: skip


async def test_factory_inputs_carry_identity_workspace_and_shared_signal() -> None:
    probe = Probe()
    await evaluate(probe, Candidate(probe), make_source(1), repetitions=2)
    workspace_input, factory_input = probe.workspace_inputs[1], probe.factory_inputs[1]
    assert (workspace_input.candidate_id, workspace_input.task_id) == ("candidate-a", "task-0")
    assert (workspace_input.run_id, workspace_input.repetition) == ("run-000002", 2)
    assert factory_input.workspace_path == "/ws/run-000002"
    assert factory_input.signal is workspace_input.signal
    assert probe.run_inputs[1].signal is factory_input.signal
    assert not factory_input.signal.aborted


async def test_the_first_failure_aborts_the_others_and_stops_scheduling() -> None:
    probe = Probe()
    waiting = asyncio.Event()
    saw_abort: list[bool] = []

    async def blocked(input: EvaluationRuntimeInput) -> object:
        waiting.set()
        await input.signal.wait()
        saw_abort.append(input.signal.aborted)
        return EvaluationCompleted(public_evidence=("42",))

    async def broken(_input: EvaluationRuntimeInput) -> object:
        await waiting.wait()
        raise RuntimeError("boom")

    candidate = Candidate(probe, {"run-000001": blocked, "run-000002": broken})
    error = await failure(evaluate(probe, candidate, make_source(4), concurrency=2))
    assert error.code == "EVALUATION_RUNTIME_FAILED"
    assert error.message == "Evaluation runtime failed"
    assert isinstance(error.__cause__, RuntimeError)
    assert saw_abort == [True]
    assert [i.run_id for i in probe.factory_inputs] == ["run-000001", "run-000002"]
    # both runs were cleaned up, in ownership order
    assert probe.log.count("dispose run-000001") == 1
    assert probe.log.count("cleanup /ws/run-000001") == 1
    assert probe.log.count("dispose run-000002") == 1
    assert probe.log.count("cleanup /ws/run-000002") == 1


async def test_primary_failure_is_the_first_to_happen_not_the_first_in_work_order() -> None:
    probe = Probe()
    started = asyncio.Event()

    async def waits(input: EvaluationRuntimeInput) -> object:
        started.set()
        await input.signal.wait()
        return {"status": "failed", "errorCode": "LATE"}

    async def fails(_input: EvaluationRuntimeInput) -> object:
        await started.wait()
        return {"status": "bogus"}

    candidate = Candidate(probe, {"run-000001": waits, "run-000002": fails})
    error = await failure(evaluate(probe, candidate, make_source(2), concurrency=2))
    assert error.code == "EVALUATION_RUNTIME_FAILED"  # run 2's invalid output, not run 1's cancel


# -- One run: outputs, judge, metrics -----------------------------------------------------------


async def test_failed_outputs_become_error_runs_without_the_judge() -> None:
    probe = Probe()
    judged: list[JudgeInput] = []

    class Judge:
        def judge(self, input: JudgeInput) -> JudgeOutput:
            judged.append(input)
            return JudgeOutput(verdict="pass")

    async def kept(_input: EvaluationRuntimeInput) -> object:
        return EvaluationFailed(error_code="TOOL:TIMEOUT", public_metrics={"steps": 3})

    async def sanitized(_input: EvaluationRuntimeInput) -> object:
        return {"status": "failed", "errorCode": "not a code"}

    async def missing(_input: EvaluationRuntimeInput) -> object:
        return {"status": "failed"}

    candidate = Candidate(
        probe, {"run-000001": kept, "run-000002": sanitized, "run-000003": missing}
    )
    report = await evaluate(probe, candidate, make_source(3), judge=Judge())
    assert [(run.verdict, run.error_code) for run in report.runs] == [
        ("error", "TOOL:TIMEOUT"),
        ("error", "TASK_FAILED"),
        ("error", "TASK_FAILED"),
    ]
    assert report.runs[0].public_metrics == {"steps": 3.0}
    assert judged == []


async def test_completed_outputs_are_judged_and_metrics_merged_sorted() -> None:
    probe = Probe()

    class Judge:
        async def judge(self, input: JudgeInput) -> object:
            probe.judge_inputs.append(input)
            return {"verdict": "fail", "publicMetrics": {"alpha": 1, "zeta": 0.25}}

    async def behaviour(_input: EvaluationRuntimeInput) -> object:
        return {"status": "completed", "publicEvidence": ["x", "y"], "publicMetrics": {"mid": 2}}

    report = await evaluate(probe, Candidate(probe, behaviour), make_source(1), judge=Judge())
    run = report.runs[0]
    assert (run.verdict, run.error_code) == ("fail", None)
    assert list(run.public_metrics) == ["alpha", "mid", "zeta"]
    assert isinstance(run.public_metrics, PublicMetrics)
    judge_input = probe.judge_inputs[0]
    assert judge_input.candidate_public_evidence == ("x", "y")
    assert judge_input.expected_public_evidence.includes == ("42",)
    assert (judge_input.task_id, judge_input.run_id) == ("task-0", "run-000001")


@pytest.mark.parametrize(
    "output",
    [
        None,
        "completed",
        {"status": "done"},
        {"status": "completed"},
        {"status": "completed", "publicEvidence": "42"},
        {"status": "completed", "publicEvidence": [""]},
        {"status": "completed", "publicEvidence": [" \u3000"]},
        {"status": "completed", "publicEvidence": [42]},
        {"status": "completed", "publicEvidence": ["e"] * 33},
        {"status": "completed", "publicEvidence": ["e" * 4_097]},
        {"status": "completed", "publicEvidence": ["\U0001f600" * 4_097]},
        {"status": "completed", "publicEvidence": ["e" * 4_096] * 16},
        {"status": "completed", "publicEvidence": [], "publicMetrics": []},
        {"status": "completed", "publicEvidence": [], "publicMetrics": {"1bad": 1}},
        {"status": "completed", "publicEvidence": [], "publicMetrics": {"nan": float("nan")}},
        {"status": "completed", "publicEvidence": [], "publicMetrics": {"b": True}},
        {"status": "completed", "publicEvidence": [], "publicMetrics": {"big": 10**400}},
        {
            "status": "completed",
            "publicEvidence": [],
            "publicMetrics": {f"m{i}": i for i in range(65)},
        },
        EvaluationCompleted(public_evidence=("ok",), public_metrics={"inf": float("inf")}),
    ],
)
async def test_invalid_runtime_outputs_fail_the_run(output: object) -> None:
    probe = Probe()

    async def behaviour(_input: EvaluationRuntimeInput) -> object:
        return output

    error = await failure(evaluate(probe, Candidate(probe, behaviour), make_source(1)))
    assert error.code == "EVALUATION_RUNTIME_FAILED"
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]


async def test_evidence_budget_counts_the_required_side() -> None:
    probe = Probe()
    source = make_source(1, evidence=tuple(letter * 4_096 for letter in "abcdefgh"))

    async def exactly(_input: EvaluationRuntimeInput) -> object:
        return EvaluationCompleted(public_evidence=("c" * 4_096,) * 8)

    report = await evaluate(probe, Candidate(probe, exactly), source)
    assert report.runs[0].verdict == "fail"

    async def over(_input: EvaluationRuntimeInput) -> object:
        return EvaluationCompleted(public_evidence=("c" * 4_096,) * 8 + ("c",))

    error = await failure(evaluate(probe, Candidate(probe, over), source))
    assert error.code == "EVALUATION_RUNTIME_FAILED"


@pytest.mark.parametrize(
    ("judgement", "runtime_metrics"),
    [
        (None, {}),
        ({"verdict": "error"}, {}),
        ({"verdict": "pass", "publicMetrics": {"bad name": 1}}, {}),
        (JudgeOutput(verdict="pass", public_metrics={"shared": 1}), {"shared": 2}),
    ],
)
async def test_invalid_judgements_fail_the_run(
    judgement: object, runtime_metrics: dict[str, float]
) -> None:
    probe = Probe()

    class Judge:
        def judge(self, input: JudgeInput) -> object:
            return judgement

    async def behaviour(_input: EvaluationRuntimeInput) -> object:
        return EvaluationCompleted(public_evidence=("42",), public_metrics=runtime_metrics)

    error = await failure(
        evaluate(probe, Candidate(probe, behaviour), make_source(1), judge=Judge())
    )
    assert error.code == "EVALUATION_JUDGE_FAILED"
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]


async def test_merged_metrics_over_128_fail_the_judge() -> None:
    probe = Probe()

    class Judge:
        def judge(self, input: JudgeInput) -> object:
            return JudgeOutput(verdict="pass", public_metrics={f"j{i}": 1 for i in range(64)})

    async def behaviour(_input: EvaluationRuntimeInput) -> object:
        metrics = {f"r{i}": 1.0 for i in range(64)}
        return EvaluationCompleted(public_evidence=("42",), public_metrics=metrics)

    report = await evaluate(probe, Candidate(probe, behaviour), make_source(1), judge=Judge())
    assert len(report.runs[0].public_metrics) == 128


async def test_judge_exceptions_are_judge_failures() -> None:
    probe = Probe()

    class Judge:
        def judge(self, input: JudgeInput) -> object:
            raise ValueError("judge broke")

    error = await failure(evaluate(probe, Candidate(probe), make_source(1), judge=Judge()))
    assert error.code == "EVALUATION_JUDGE_FAILED"
    assert str(error.__cause__) == "judge broke"
    assert probe.log == [
        "workspace run-000001",
        "create run-000001",
        "run run-000001",
        "dispose run-000001",
        "cleanup /ws/run-000001",
    ]


async def test_sync_runtimes_and_factories_are_accepted() -> None:
    probe = Probe()

    class SyncRuntime:
        def run(self, input: EvaluationRuntimeInput) -> object:
            probe.run_inputs.append(input)
            return EvaluationCompleted(public_evidence=("42",))

        def dispose(self) -> None:
            probe.log.append("dispose")

    class SyncCandidate:
        id = "sync"

        async def create_runtime(self, input: RuntimeFactoryInput) -> SyncRuntime:
            return SyncRuntime()

    async def workspace(input: WorkspaceFactoryInput) -> Workspace:
        return Workspace(probe, Path("/ws/path"))

    report = await run_evaluation(
        candidate=SyncCandidate(), tasks=make_source(1), workspace_factory=workspace
    )
    assert report.runs[0].verdict == "pass"
    assert probe.log == ["dispose", "cleanup /ws/path"]


# -- Privacy ------------------------------------------------------------------------------------


def test_runtime_and_judge_inputs_carry_only_public_data() -> None:
    assert [f.name for f in dataclasses.fields(EvaluationRuntimeInput)] == ["prompt", "signal"]
    assert [f.name for f in dataclasses.fields(JudgeInput)] == [
        "task_id",
        "run_id",
        "prompt",
        "expected_public_evidence",
        "candidate_public_evidence",
        "signal",
    ]


async def test_fixture_only_fields_never_reach_the_runtime_or_the_judge() -> None:
    probe = Probe()
    source = make_source(1)
    source["tasks"][0]["candidatePublicEvidence"] = ["SECRET-FIXTURE-ANSWER"]

    class Judge:
        def judge(self, input: JudgeInput) -> JudgeOutput:
            probe.judge_inputs.append(input)
            return deterministic_judge.judge(input)

    async def behaviour(input: EvaluationRuntimeInput) -> object:
        return EvaluationCompleted(public_evidence=("produced",))

    report = await evaluate(probe, Candidate(probe, behaviour), source, judge=Judge())
    assert probe.run_inputs[0].prompt == "prompt 0"
    assert probe.judge_inputs[0].candidate_public_evidence == ("produced",)
    everything = repr(probe.run_inputs) + repr(probe.judge_inputs) + repr(probe.factory_inputs)
    assert "SECRET-FIXTURE-ANSWER" not in everything
    text = serialize_evaluation_report(report)
    for private in ("prompt 0", "produced", "42", "SECRET"):
        assert private not in text


# -- Cleanup on every path ----------------------------------------------------------------------


async def test_successful_runs_dispose_then_clean_up_once_each() -> None:
    probe = Probe()
    await evaluate(probe, Candidate(probe), make_source(1))
    assert probe.log == [
        "workspace run-000001",
        "create run-000001",
        "run run-000001",
        "dispose run-000001",
        "cleanup /ws/run-000001",
    ]


async def test_workspace_factory_failures() -> None:
    probe = Probe()

    def broken(input: WorkspaceFactoryInput) -> Workspace:
        raise OSError("disk full")

    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), workspace_factory=broken)
    )
    assert error.code == "EVALUATION_WORKSPACE_FAILED"
    assert error.message == "Evaluation workspace failed"
    assert isinstance(error.__cause__, OSError)
    assert probe.log == []


@pytest.mark.parametrize("path", ["", "   ", None, 42, b"/bytes", "p" * 4_097])
async def test_an_invalid_workspace_path_still_cleans_up(path: object) -> None:
    probe = Probe()

    def factory(input: WorkspaceFactoryInput) -> Workspace:
        return Workspace(probe, path)

    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), workspace_factory=factory)
    )
    assert error.code == "EVALUATION_WORKSPACE_FAILED"
    assert probe.log == [f"cleanup {path}"]


async def test_runtime_factory_failure_cleans_the_workspace() -> None:
    probe = Probe()
    candidate = Candidate(probe, factory_error=LookupError("no model"))
    error = await failure(evaluate(probe, candidate, make_source(1)))
    assert error.code == "EVALUATION_RUNTIME_FACTORY_FAILED"
    assert isinstance(error.__cause__, LookupError)
    assert probe.log == ["workspace run-000001", "create run-000001", "cleanup /ws/run-000001"]


async def test_runtime_run_failure_disposes_then_cleans() -> None:
    probe = Probe()

    async def broken(_input: EvaluationRuntimeInput) -> object:
        raise KeyError("x")

    error = await failure(evaluate(probe, Candidate(probe, broken), make_source(1)))
    assert error.code == "EVALUATION_RUNTIME_FAILED"
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]


async def test_a_runtime_without_run_is_disposed() -> None:
    probe = Probe()

    class NoRun:
        def dispose(self) -> None:
            probe.log.append("dispose")

    class Factory:
        id = "no-run"

        def create_runtime(self, input: RuntimeFactoryInput) -> NoRun:
            return NoRun()

    error = await failure(evaluate(probe, Factory(), make_source(1)))
    assert error.code == "EVALUATION_RUNTIME_FACTORY_FAILED"
    assert probe.log == ["workspace run-000001", "dispose", "cleanup /ws/run-000001"]


class Base:
    def cleanup(self) -> None:
        CALLS.append("inherited")


CALLS: list[str] = []


def deep_class(depth: int) -> type:
    klass: type = Base
    for level in range(depth):
        klass = type(f"Level{level}", (klass,), {})
    return klass


class WithProperty:
    path = "/ws/p"

    @property
    def cleanup(self) -> Callable[[], None]:
        CALLS.append("getter ran")
        return lambda: None


class Slotted:
    __slots__ = ("cleanup", "path")

    def __init__(self) -> None:
        self.path = "/ws/s"
        self.cleanup = lambda: CALLS.append("slot")


class UnsetSlot:
    __slots__ = ("cleanup", "path")

    def __init__(self) -> None:
        self.path = "/ws/u"


class Static:
    path = "/ws/st"

    @staticmethod
    def cleanup() -> None:
        CALLS.append("static")


class FromClass:
    path = "/ws/c"

    @classmethod
    def cleanup(cls) -> None:
        CALLS.append(f"class {cls.__name__}")


class NotCallable:
    path = "/ws/n"
    cleanup = 5


class OtherDescriptor:
    path = "/ws/o"
    cleanup = functools.cached_property(lambda self: None)


class Own:
    def __init__(self) -> None:
        self.path = "/ws/own"
        self.cleanup = lambda: CALLS.append("own")


class CallableAttribute:
    class Cleaner:
        def __call__(self) -> None:
            CALLS.append("callable object")

    path = "/ws/callable"
    cleanup = Cleaner()


@pytest.mark.parametrize(
    ("make", "calls"),
    [
        (lambda: deep_class(7)(), ["inherited"]),
        (lambda: Slotted(), ["slot"]),
        (lambda: Static(), ["static"]),
        (lambda: FromClass(), ["class FromClass"]),
        (lambda: Own(), ["own"]),
        (lambda: CallableAttribute(), ["callable object"]),
    ],
)
async def test_cleanup_methods_found_without_running_accessors(
    make: Callable[[], object], calls: list[str]
) -> None:
    CALLS.clear()

    def factory(input: WorkspaceFactoryInput) -> object:
        workspace = make()
        if not hasattr(workspace, "path"):
            object.__setattr__(workspace, "path", "/ws/x")
        return workspace

    probe = Probe()
    await evaluate(probe, Candidate(probe), make_source(1), workspace_factory=factory)
    assert calls == CALLS


@pytest.mark.parametrize(
    "make",
    [
        lambda: deep_class(8)(),
        WithProperty,
        UnsetSlot,
        NotCallable,
        OtherDescriptor,
        lambda: None,
        lambda: {"path": "/ws/d", "cleanup": lambda: None},
    ],
)
async def test_invalid_cleanup_methods_fail_the_workspace(make: Callable[[], object]) -> None:
    CALLS.clear()

    def factory(input: WorkspaceFactoryInput) -> object:
        workspace = make()
        if type(workspace).__name__.startswith("Level"):
            workspace.path = "/ws/deep"  # type: ignore[attr-defined]
        return workspace

    probe = Probe()
    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), workspace_factory=factory)
    )
    assert error.code == "EVALUATION_WORKSPACE_FAILED"
    assert CALLS == []
    assert probe.factory_inputs == []


async def test_a_runtime_without_dispose_is_rejected_and_the_workspace_cleaned() -> None:
    probe = Probe()

    class NoDispose:
        async def run(self, input: EvaluationRuntimeInput) -> object:
            raise AssertionError("never called")

    class Factory:
        id = "no-dispose"

        def create_runtime(self, input: RuntimeFactoryInput) -> NoDispose:
            return NoDispose()

    error = await failure(evaluate(probe, Factory(), make_source(1)))
    assert error.code == "EVALUATION_RUNTIME_FACTORY_FAILED"
    assert probe.log == ["workspace run-000001", "cleanup /ws/run-000001"]


async def test_dispose_failure_aggregates_with_the_primary_failure() -> None:
    probe = Probe()
    dispose_error = RuntimeError("dispose broke")

    async def broken(_input: EvaluationRuntimeInput) -> object:
        raise ValueError("run broke")

    candidate = Candidate(probe, broken, dispose_errors={"run-000001": dispose_error})
    error = await failure(evaluate(probe, candidate, make_source(1)))
    assert error.code == "EVALUATION_CLEANUP_FAILED"
    assert error.message == "Evaluation cleanup failed"
    group = error.__cause__
    assert isinstance(group, EvaluationCleanupErrors)
    primary, cleanup = group.errors
    assert isinstance(primary, EvaluationInfrastructureError)
    assert primary.code == "EVALUATION_RUNTIME_FAILED"
    assert cleanup is dispose_error
    assert error.errors == (primary, dispose_error)
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]


async def test_cleanup_failures_of_a_successful_run_are_aggregated_alone() -> None:
    probe = Probe()
    cleanup_error = OSError("busy")
    workspaces = Workspaces(probe, errors={"run-000001": cleanup_error})
    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), workspace_factory=workspaces)
    )
    assert error.code == "EVALUATION_CLEANUP_FAILED"
    assert error.errors == (cleanup_error,)


async def test_a_cleanup_that_raises_cancelled_error_is_a_cleanup_failure() -> None:
    probe = Probe()

    class Cancelling:
        path = "/ws/cancel"

        async def cleanup(self) -> None:
            raise asyncio.CancelledError

    class SyncCancelling:
        path = "/ws/sync-cancel"

        def cleanup(self) -> None:
            raise asyncio.CancelledError

    for workspace in (Cancelling(), SyncCancelling()):

        def factory(input: WorkspaceFactoryInput, workspace: object = workspace) -> object:
            return workspace

        error = await failure(
            evaluate(probe, Candidate(probe), make_source(1), workspace_factory=factory)
        )
        assert error.code == "EVALUATION_CLEANUP_FAILED"
        (nested,) = error.errors
        assert isinstance(nested, EvaluationInfrastructureError)
        assert nested.code == "EVALUATION_CLEANUP_FAILED"


async def test_a_hanging_cleanup_times_out_through_the_timer() -> None:
    probe = Probe()
    timer = FakeTimer()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    workspaces = Workspaces(probe, gates={"run-000001": gate})
    task = asyncio.ensure_future(
        evaluate(
            probe,
            Candidate(probe),
            make_source(1),
            workspace_factory=workspaces,
            cleanup_timer=timer,
            cleanup_timeout_ms=250,
        )
    )
    await timer.wait_for(2)  # dispose (settled at once), then the workspace cleanup
    dispose, cleanup = timer.scheduled
    assert (dispose.delay_ms, cleanup.delay_ms) == (250, 250)
    assert dispose.cancelled == 1
    assert cleanup.cancelled == 0
    cleanup.on_timeout()
    error = await failure(task)
    assert error.code == "EVALUATION_CLEANUP_FAILED"
    (timeout,) = error.errors
    assert isinstance(timeout, EvaluationInfrastructureError)
    assert timeout.code == "EVALUATION_CLEANUP_TIMEOUT"
    assert timeout.message == "Evaluation cleanup timed out"
    assert cleanup.cancelled == 1
    cleanup.on_timeout()  # a late timer call changes nothing
    gate.set_result(None)  # the abandoned cleanup finishes in the background
    await asyncio.sleep(0)
    assert probe.log.count("cleanup /ws/run-000001") == 1


async def test_the_default_timer_bounds_a_hanging_cleanup() -> None:
    probe = Probe()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    workspaces = Workspaces(probe, gates={"run-000001": gate})
    error = await failure(
        evaluate(
            probe, Candidate(probe), make_source(1), workspace_factory=workspaces,
            cleanup_timeout_ms=1,
        )
    )  # fmt: skip
    assert [
        nested.code for nested in error.errors if isinstance(nested, EvaluationInfrastructureError)
    ] == ["EVALUATION_CLEANUP_TIMEOUT"]
    gate.set_result(None)
    await asyncio.sleep(0)


async def test_timer_problems_are_cleanup_failures_but_cleanups_still_run() -> None:
    probe = Probe()

    class BrokenSchedule:
        def schedule(self, delay_ms: int, on_timeout: Callable[[], None]) -> Callable[[], None]:
            raise RuntimeError("no timer")

    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), cleanup_timer=BrokenSchedule())
    )
    assert error.code == "EVALUATION_CLEANUP_FAILED"
    assert [str(e) for e in error.errors] == ["no timer", "no timer"]
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]

    class BrokenCancel:
        def schedule(self, delay_ms: int, on_timeout: Callable[[], None]) -> Callable[[], None]:
            def cancel() -> None:
                raise RuntimeError("no cancel")

            return cancel

    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), cleanup_timer=BrokenCancel())
    )
    assert [str(e) for e in error.errors] == ["no cancel", "no cancel"]

    class NoCancel:
        def schedule(self, delay_ms: int, on_timeout: Callable[[], None]) -> object:
            return None

    probe.log.clear()
    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), cleanup_timer=NoCancel())
    )
    assert error.code == "EVALUATION_CLEANUP_FAILED"
    assert [(type(e), str(e)) for e in error.errors] == [
        (TypeError, "cleanup timer must return a cancel function"),
        (TypeError, "cleanup timer must return a cancel function"),
    ]
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]

    failing = Workspaces(probe, errors={"run-000001": OSError("disk gone")})
    error = await failure(
        evaluate(
            probe, Candidate(probe), make_source(1), workspace_factory=failing,
            cleanup_timer=NoCancel(),
        )
    )  # fmt: skip
    assert [str(e) for e in error.errors] == [
        "cleanup timer must return a cancel function",
        "disk gone",  # the cleanup's own failure is the one reported
    ]


# -- Cancellation -------------------------------------------------------------------------------


async def test_an_already_aborted_signal_cancels_before_anything_is_built() -> None:
    probe = Probe()
    controller = AbortController()
    controller.abort()
    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), signal=controller.signal)
    )
    assert error.code == "EVALUATION_CANCELLED"
    assert error.message == "Evaluation was cancelled"
    assert probe.log == []


async def test_abort_mid_run_cancels_at_once_and_still_cleans_up() -> None:
    probe = Probe()
    controller = AbortController()
    running = asyncio.Event()
    finished = asyncio.Event()

    async def slow(input: EvaluationRuntimeInput) -> object:
        running.set()
        try:
            await asyncio.get_running_loop().create_future()  # ignores the signal entirely
        finally:
            finished.set()
        raise AssertionError("unreachable")

    task = asyncio.ensure_future(
        evaluate(probe, Candidate(probe, slow), make_source(2), signal=controller.signal)
    )
    await running.wait()
    controller.abort(RuntimeError("user pressed ctrl-c"))
    error = await failure(task)
    assert error.code == "EVALUATION_CANCELLED"
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]
    assert [i.run_id for i in probe.factory_inputs] == ["run-000001"]
    assert not finished.is_set()  # the abandoned run is left to its signal...
    for pending in list(asyncio.all_tasks()):
        if pending is not asyncio.current_task():
            pending.cancel()
    await finished.wait()  # ...and, here, cancelled by the test


async def test_abort_between_steps_is_an_abort_check() -> None:
    probe = Probe()
    controller = AbortController()

    class AbortingCandidate(Candidate):
        def create_runtime(self, input: RuntimeFactoryInput) -> Runtime:
            controller.abort()
            return super().create_runtime(input)

    error = await failure(
        evaluate(probe, AbortingCandidate(probe), make_source(1), signal=controller.signal)
    )
    assert error.code == "EVALUATION_CANCELLED"
    assert probe.log == [
        "workspace run-000001",
        "create run-000001",
        "dispose run-000001",
        "cleanup /ws/run-000001",
    ]


async def test_an_error_raised_after_abort_is_cancellation() -> None:
    probe = Probe()
    controller = AbortController()

    def factory(input: WorkspaceFactoryInput) -> object:
        controller.abort()
        raise OSError("interrupted")

    error = await failure(
        evaluate(
            probe, Candidate(probe), make_source(1), signal=controller.signal,
            workspace_factory=factory,
        )
    )  # fmt: skip
    assert error.code == "EVALUATION_CANCELLED"
    assert isinstance(error.__cause__, OSError)


async def test_abort_during_cleanup_cancels_the_finished_run() -> None:
    probe = Probe()
    controller = AbortController()

    class AbortingWorkspace:
        path = "/ws/abort"

        def cleanup(self) -> None:
            controller.abort()

    def factory(input: WorkspaceFactoryInput) -> object:
        return AbortingWorkspace()

    error = await failure(
        evaluate(
            probe, Candidate(probe), make_source(1), signal=controller.signal,
            workspace_factory=factory,
        )
    )  # fmt: skip
    assert error.code == "EVALUATION_CANCELLED"


async def test_a_late_workspace_is_cleaned_up() -> None:
    probe = Probe()
    controller = AbortController()
    entered = asyncio.Event()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    cleaned = asyncio.Event()

    class Late:
        path = "/ws/late"

        async def cleanup(self) -> None:
            cleaned.set()
            raise RuntimeError("late cleanup failure is swallowed")

    async def factory(input: WorkspaceFactoryInput) -> object:
        entered.set()
        await gate
        return Late()

    task = asyncio.ensure_future(
        evaluate(
            probe, Candidate(probe), make_source(1), signal=controller.signal,
            workspace_factory=factory,
        )
    )  # fmt: skip
    await entered.wait()
    controller.abort()
    error = await failure(task)
    assert error.code == "EVALUATION_CANCELLED"
    assert not cleaned.is_set()
    gate.set_result(None)
    await cleaned.wait()
    await asyncio.sleep(0)


async def test_a_late_runtime_is_disposed() -> None:
    probe = Probe()
    controller = AbortController()
    entered = asyncio.Event()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    disposed = asyncio.Event()

    class LateRuntime:
        async def run(self, input: EvaluationRuntimeInput) -> object:
            raise AssertionError("never run")

        def dispose(self) -> None:
            disposed.set()

    class LateCandidate:
        id = "late"

        async def create_runtime(self, input: RuntimeFactoryInput) -> object:
            entered.set()
            await gate
            return LateRuntime()

    task = asyncio.ensure_future(
        evaluate(probe, LateCandidate(), make_source(1), signal=controller.signal)
    )
    await entered.wait()
    controller.abort()
    error = await failure(task)
    assert error.code == "EVALUATION_CANCELLED"
    assert probe.log == ["workspace run-000001", "cleanup /ws/run-000001"]
    gate.set_result(None)
    await disposed.wait()


async def test_work_already_running_when_the_abort_lands_in_the_factory_call_is_cleaned() -> None:
    probe = Probe()
    controller = AbortController()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    cleaned = asyncio.Event()
    disposed = asyncio.Event()

    class Late:
        path = "/ws/late"

        def cleanup(self) -> None:
            cleaned.set()

    class LateRuntime:
        async def run(self, input: EvaluationRuntimeInput) -> object:
            raise AssertionError("never run")

        async def dispose(self) -> None:
            disposed.set()

    async def make_workspace() -> Late:
        await gate
        return Late()

    async def make_runtime() -> LateRuntime:
        await gate
        return LateRuntime()

    def workspace_factory(input: WorkspaceFactoryInput) -> object:
        started = asyncio.ensure_future(make_workspace())  # the work already runs
        controller.abort()  # Ctrl-C lands while the factory is called
        return started

    error = await failure(
        evaluate(
            probe, Candidate(probe), make_source(1), signal=controller.signal,
            workspace_factory=workspace_factory,
        )
    )  # fmt: skip
    assert error.code == "EVALUATION_CANCELLED"

    second = AbortController()

    class AbortingCandidate:
        id = "aborting"

        def create_runtime(self, input: RuntimeFactoryInput) -> object:
            started = asyncio.ensure_future(make_runtime())
            second.abort()
            return started

    error = await failure(
        evaluate(probe, AbortingCandidate(), make_source(1), signal=second.signal)
    )
    assert error.code == "EVALUATION_CANCELLED"
    assert not cleaned.is_set()
    assert not disposed.is_set()
    gate.set_result(None)
    async with asyncio.timeout(10):  # fails (does not hang) if the late values are dropped
        await cleaned.wait()
        await disposed.wait()
    await settle_background()


@pytest.mark.parametrize("outcome", ["raise", "invalid"])
async def test_late_failures_and_invalid_late_values_are_swallowed(outcome: str) -> None:
    probe = Probe()
    controller = AbortController()
    entered = asyncio.Event()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def factory(input: WorkspaceFactoryInput) -> object:
        entered.set()
        try:
            await gate
        finally:
            done.set()
        if outcome == "raise":
            raise OSError("late")
        return object()

    task = asyncio.ensure_future(
        evaluate(
            probe, Candidate(probe), make_source(1), signal=controller.signal,
            workspace_factory=factory,
        )
    )  # fmt: skip
    await entered.wait()
    controller.abort()
    assert (await failure(task)).code == "EVALUATION_CANCELLED"
    gate.set_result(None)
    await done.wait()
    await asyncio.sleep(0)


async def test_cancelling_the_evaluation_task_aborts_runs_and_waits_for_cleanup() -> None:
    probe = Probe()
    running = asyncio.Event()
    seen: list[bool] = []

    async def waits(input: EvaluationRuntimeInput) -> object:
        running.set()
        await input.signal.wait()
        seen.append(input.signal.aborted)
        return EvaluationCompleted(public_evidence=("42",))

    task = asyncio.ensure_future(evaluate(probe, Candidate(probe, waits), make_source(1)))
    await running.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]
    await asyncio.sleep(0)
    assert seen == [True]


async def test_cancelling_the_job_task_directly_still_releases_resources() -> None:
    probe = Probe()
    running = asyncio.Event()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    candidate: Any = Candidate(probe, lambda _input: gate)
    workspaces: Any = Workspaces(probe)
    job = EvaluationJob(
        candidate=candidate,
        candidate_id="candidate-a",
        judge=deterministic_judge,
        clock=ZeroClock(),
        workspace_factory=workspaces,
        cleanup_timeout_ms=1000,
        cleanup_timer=LoopCleanupTimer(),
    )
    (item,) = work_items(load_evaluation_tasks(make_source(1)), 1)

    async def run() -> EvaluationRunReport:
        running.set()
        return await job.run_one(item, AbortSignal())

    task = asyncio.ensure_future(run())
    await running.wait()
    for _ in range(5):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await settle_background()
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]


async def settle_background() -> None:
    """Wait for every other task (the background cleanups) to finish."""
    current = asyncio.current_task()
    await asyncio.gather(*(task for task in asyncio.all_tasks() if task is not current))


async def test_a_cancelled_job_task_releases_in_order_under_the_timer() -> None:
    log: list[str] = []
    running = asyncio.Event()
    disposing = asyncio.Event()
    stalled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    dispose_gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    class SlowDispose:
        async def run(self, input: EvaluationRuntimeInput) -> object:
            running.set()
            await stalled
            return EvaluationCompleted(public_evidence=("42",))

        async def dispose(self) -> None:
            log.append("dispose start")
            disposing.set()
            await dispose_gate
            log.append("dispose end")

    class Factory:
        id = "slow"

        def create_runtime(self, input: RuntimeFactoryInput) -> SlowDispose:
            return SlowDispose()

    class Logged:
        path = "/ws/logged"

        async def cleanup(self) -> None:
            log.append("cleanup")

    def workspace(input: WorkspaceFactoryInput) -> Logged:
        return Logged()

    timer = FakeTimer()
    job = make_job(Probe(), Factory(), workspace_factory=workspace, cleanup_timer=timer)
    (item,) = work_items(load_evaluation_tasks(make_source(1)), 1)
    task = asyncio.ensure_future(job.run_one(item, AbortSignal()))
    await running.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await disposing.wait()
    assert log == ["dispose start"]  # the workspace waits for the runtime it hosts
    assert [entry.cancelled for entry in timer.scheduled] == [0]  # dispose is timed
    dispose_gate.set_result(None)
    await settle_background()
    assert log == ["dispose start", "dispose end", "cleanup"]
    assert [entry.cancelled for entry in timer.scheduled] == [1, 1]
    stalled.cancel()


# -- Clock --------------------------------------------------------------------------------------


class Ticks:
    def __init__(self, *values: object) -> None:
        self.values = list(values)

    def now(self) -> object:
        value = self.values.pop(0)
        if isinstance(value, Exception):
            raise value
        return value


async def test_durations_come_from_the_clock() -> None:
    probe = Probe()
    report = await evaluate(probe, Candidate(probe), make_source(2), clock=Ticks(10, 12.5, 20, 20))
    assert [run.duration_ms for run in report.runs] == [2.5, 0]


@pytest.mark.parametrize(
    "ticks",
    [
        (RuntimeError("no clock"),),
        (float("nan"),),
        ("0",),
        (True,),
        (10**400,),
        (0, float("inf")),
        (5, 4),
        (0, RuntimeError("later")),
    ],
)
async def test_clock_failures(ticks: tuple[object, ...]) -> None:
    probe = Probe()
    error = await failure(evaluate(probe, Candidate(probe), make_source(1), clock=Ticks(*ticks)))
    assert error.code == "EVALUATION_CLOCK_FAILED"
    assert error.message == "Evaluation clock failed"


async def test_an_async_clock_is_rejected_without_a_never_awaited_warning() -> None:
    class AsyncClock:
        async def now(self) -> float:
            return 0.0

    probe = Probe()
    error = await failure(evaluate(probe, Candidate(probe), make_source(1), clock=AsyncClock()))
    assert error.code == "EVALUATION_CLOCK_FAILED"


def test_monotonic_clock_moves_forward() -> None:
    clock = MonotonicClock()
    assert clock.now() <= clock.now()


# -- Options ------------------------------------------------------------------------------------


class NoId:
    def create_runtime(self, input: RuntimeFactoryInput) -> None:
        return None


class BadId:
    id = "Not Valid"

    def create_runtime(self, input: RuntimeFactoryInput) -> None:
        return None


class NoFactory:
    id = "ok"


class RaisingId:
    @property
    def id(self) -> str:
        raise RuntimeError("no id")


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"candidate": NoId()}, "candidate must have an id"),
        ({"candidate": RaisingId()}, "candidate must have an id"),
        ({"candidate": BadId()}, "candidate.id must match the ID pattern"),
        ({"candidate": NoFactory()}, "candidate.create_runtime must be a function"),
        ({"judge": object()}, "judge.judge must be a function"),
        ({"clock": object()}, "clock.now must be a function"),
        ({"workspace_factory": "/tmp"}, "workspace_factory must be a function"),
        ({"cleanup_timer": object()}, "cleanup_timer.schedule must be a function"),
        ({"executor": object()}, "executor.execute must be a function"),
        ({"on_run": 5}, "on_run must be a function"),
        ({"repetitions": 0}, "repetitions must be an integer from 1 to 64"),
        ({"repetitions": 65}, "repetitions must be an integer from 1 to 64"),
        ({"repetitions": True}, "repetitions must be an integer from 1 to 64"),
        ({"repetitions": 1.0}, "repetitions must be an integer from 1 to 64"),
        ({"concurrency": 0}, "concurrency must be an integer from 1 to 8"),
        ({"concurrency": 9}, "concurrency must be an integer from 1 to 8"),
        ({"cleanup_timeout_ms": 0}, "cleanup_timeout_ms must be an integer from 1 to 1000"),
        ({"cleanup_timeout_ms": 1_001}, "cleanup_timeout_ms must be an integer from 1 to 1000"),
        ({"signal": AbortController()}, "signal must be an AbortSignal"),
        ({"tasks": {"schemaVersion": 2, "tasks": []}}, "tasks: Evaluation fixture schemaVersion"),
        ({"tasks": []}, "tasks: Evaluation fixture must be an object"),
        ({"tasks": make_source(65), "repetitions": 64}, "tasks x repetitions must not exceed 4096"),
    ],
)
async def test_invalid_options(options: dict[str, Any], fragment: str) -> None:
    probe = Probe()
    arguments: dict[str, Any] = {"candidate": Candidate(probe), "tasks": make_source(1)}
    arguments.update(options)
    error = await failure(run_evaluation(**arguments))
    assert error.code == "EVALUATION_INVALID_OPTIONS"
    assert error.message.startswith("Invalid evaluation options: ")
    assert fragment in error.message
    assert probe.log == []


async def test_the_largest_evaluation_is_allowed() -> None:
    class Counting:
        async def execute(
            self,
            job: EvaluationJob,
            items: tuple[EvaluationWorkItem, ...],
            *,
            concurrency: int,
            signal: AbortSignal,
            on_settled: Any = None,
        ) -> ExecutionResult:
            reports = tuple(
                run_report(item.run_id, task_id=item.task.id, candidate_id=job.candidate_id)
                for item in items
            )
            return ExecutionResult(outcomes=reports, failure_order=())

    probe = Probe()
    report = await evaluate(
        probe, Candidate(probe), make_source(64), repetitions=64, concurrency=8,
        executor=Counting(),
    )  # fmt: skip
    assert report.public_metrics.total_runs == 4_096
    assert report.runs[-1].run_id == "run-004096"
    assert report.runs[-1].task_id == "task-63"


async def test_many_real_runs_with_full_concurrency() -> None:
    probe = Probe()
    report = await evaluate(probe, Candidate(probe), make_source(8), repetitions=8, concurrency=8)
    assert report.public_metrics.passed_runs == 64
    assert probe.log.count("dispose run-000064") == 1


async def test_loaded_tasks_are_revalidated() -> None:
    task = load_evaluation_tasks(make_source(1))[0]
    broken = dataclasses.replace(task, split="training")
    probe = Probe()
    error = await failure(evaluate(probe, Candidate(probe), (broken,)))
    assert error.code == "EVALUATION_INVALID_OPTIONS"
    assert "held-out" in error.message


# -- Executors and the evaluation outcome -------------------------------------------------------


async def test_on_run_reports_each_settled_run() -> None:
    probe = Probe()
    seen: list[object] = []
    report = await evaluate(probe, Candidate(probe), make_source(2), on_run=seen.append)
    assert seen == list(report.runs)


async def test_a_failing_progress_callback_fails_the_evaluation() -> None:
    probe = Probe()

    def broken(_outcome: object) -> None:
        raise RuntimeError("progress bar broke")

    error = await failure(evaluate(probe, Candidate(probe), make_source(2), on_run=broken))
    assert error.code == "EVALUATION_RUNTIME_FAILED"
    assert error.message == "Evaluation infrastructure failed"
    assert str(error.__cause__) == "progress bar broke"


class ScriptedExecutor:
    """An executor that returns a prepared result (for the outcome rules)."""

    def __init__(self, result: object) -> None:
        self.result = result
        self.calls: list[tuple[int, int]] = []

    async def execute(
        self,
        job: EvaluationJob,
        items: tuple[EvaluationWorkItem, ...],
        *,
        concurrency: int,
        signal: AbortSignal,
        on_settled: object = None,
    ) -> object:
        self.calls.append((len(items), concurrency))
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def infra(code: Any, *nested: Exception) -> EvaluationInfrastructureError:
    error = EvaluationInfrastructureError(code, code)
    if nested:
        error.__cause__ = EvaluationCleanupErrors("Evaluation cleanup failed", list(nested))
    return error


def run_report(
    run_id: str, verdict: Any = "pass", candidate_id: str = "candidate-a", task_id: str = "task-0"
) -> EvaluationRunReport:
    return EvaluationRunReport(
        task_id=task_id,
        run_id=run_id,
        candidate_id=candidate_id,
        verdict=verdict,
        public_metrics=PublicMetrics(),
        duration_ms=0.0,
        error_code="E" if verdict == "error" else None,
    )


async def test_outcome_raises_the_primary_without_cleanup_failures() -> None:
    first, second = infra("EVALUATION_CANCELLED"), infra("EVALUATION_JUDGE_FAILED")
    executor = ScriptedExecutor(ExecutionResult(outcomes=(first, second), failure_order=(1, 0)))
    probe = Probe()
    error = await failure(
        evaluate(probe, Candidate(probe), make_source(2), executor=executor, concurrency=2)
    )
    assert error is second
    assert executor.calls == [(2, 2)]


async def test_outcome_aggregates_cleanup_failures_in_work_order() -> None:
    primary = infra("EVALUATION_RUNTIME_FAILED")
    a, b, c = OSError("a"), OSError("b"), OSError("c")
    cancelled = infra("EVALUATION_CANCELLED")
    outcomes = (
        infra("EVALUATION_CLEANUP_FAILED", cancelled, a),
        primary,
        infra("EVALUATION_CLEANUP_FAILED", primary, b),  # the primary nested: not repeated
        None,
        infra("EVALUATION_CLEANUP_FAILED", c),
    )
    executor = ScriptedExecutor(ExecutionResult(outcomes=outcomes, failure_order=(1, 4, 0, 2)))
    probe = Probe()
    error = await failure(evaluate(probe, Candidate(probe), make_source(5), executor=executor))
    assert error.code == "EVALUATION_CLEANUP_FAILED"
    assert error.errors == (primary, a, b, c)


async def test_outcome_with_a_cleanup_primary_keeps_its_nested_errors() -> None:
    inner = infra("EVALUATION_RUNTIME_FAILED")
    x, y = OSError("x"), OSError("y")
    first = infra("EVALUATION_CLEANUP_FAILED", inner, x)
    second = infra("EVALUATION_CLEANUP_FAILED", infra("EVALUATION_CANCELLED"), y)
    executor = ScriptedExecutor(ExecutionResult(outcomes=(second, first), failure_order=(1, 0)))
    probe = Probe()
    error = await failure(evaluate(probe, Candidate(probe), make_source(2), executor=executor))
    assert error.code == "EVALUATION_CLEANUP_FAILED"
    assert error.errors == (y, inner, x)  # work order: item 0 (second) first


async def test_unstarted_items_without_failures_mean_cancellation() -> None:
    result = ExecutionResult(outcomes=(run_report("run-000001"), None), failure_order=())
    probe = Probe()
    error = await failure(
        evaluate(probe, Candidate(probe), make_source(2), executor=ScriptedExecutor(result))
    )
    assert error.code == "EVALUATION_CANCELLED"


@pytest.mark.parametrize(
    "result",
    [
        None,
        ExecutionResult(outcomes=(), failure_order=()),
        ExecutionResult(outcomes=(run_report("run-000001"),), failure_order=(0,)),
        ExecutionResult(outcomes=(run_report("run-000001"),), failure_order=(5,)),
        ExecutionResult(
            outcomes=(run_report("run-000001", candidate_id="other"),), failure_order=()
        ),
        ExecutionResult(outcomes=("report",), failure_order=()),  # type: ignore[arg-type]
        ExecutionResult(outcomes=[None], failure_order=()),  # type: ignore[arg-type]
        ValueError("executor crashed"),
    ],
)
async def test_a_misbehaving_executor_is_an_infrastructure_failure(result: object) -> None:
    probe = Probe()
    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), executor=ScriptedExecutor(result))
    )
    assert error.code == "EVALUATION_RUNTIME_FAILED"
    assert error.message == "Evaluation infrastructure failed"


async def test_an_executor_infrastructure_error_passes_through() -> None:
    own = infra("EVALUATION_WORKSPACE_FAILED")
    probe = Probe()
    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), executor=ScriptedExecutor(own))
    )
    assert error is own


async def test_local_executor_normalizes_untyped_failures() -> None:
    class Job:
        def __init__(self) -> None:
            self.calls = 0

        async def run_one(
            self, item: EvaluationWorkItem, signal: AbortSignal
        ) -> EvaluationRunReport:
            self.calls += 1
            if item.index == 0:
                raise asyncio.CancelledError  # raised by the job, not a cancellation of ours
            raise ValueError("bug")

    items = work_items(load_evaluation_tasks(make_source(2)), 1)
    job = Job()
    result = await LocalExecutor().execute(
        job,  # type: ignore[arg-type]
        items,
        concurrency=1,
        signal=AbortSignal(),
    )
    first, second = result.outcomes
    assert isinstance(first, EvaluationInfrastructureError)
    assert first.code == "EVALUATION_RUNTIME_FAILED"
    assert second is None  # the first failure stopped scheduling
    assert result.failure_order == (0,)

    entered: list[int] = []
    both = asyncio.Event()

    class BadJob:
        async def run_one(
            self, item: EvaluationWorkItem, signal: AbortSignal
        ) -> EvaluationRunReport:
            entered.append(item.index)
            if len(entered) == 2:
                both.set()
            await both.wait()
            raise ValueError("bug")

    result = await LocalExecutor().execute(
        BadJob(),  # type: ignore[arg-type]
        items,
        concurrency=2,
        signal=AbortSignal(),
    )
    assert [type(o).__name__ for o in result.outcomes] == ["EvaluationInfrastructureError"] * 2
    assert sorted(result.failure_order) == [0, 1]


async def test_local_executor_with_no_items() -> None:
    result = await LocalExecutor().execute(
        None,  # type: ignore[arg-type]
        (),
        concurrency=4,
        signal=AbortSignal(),
    )
    assert result == ExecutionResult(outcomes=(), failure_order=())


class Fatal(BaseException):
    """A bare ``BaseException``: never turned into an item failure."""


async def test_local_executor_lets_bare_base_exceptions_through() -> None:
    class Exiting:
        async def run_one(
            self, item: EvaluationWorkItem, signal: AbortSignal
        ) -> EvaluationRunReport:
            raise Fatal

    items = work_items(load_evaluation_tasks(make_source(1)), 1)
    with pytest.raises(Fatal):
        await LocalExecutor().execute(
            Exiting(),  # type: ignore[arg-type]
            items,
            concurrency=1,
            signal=AbortSignal(),
        )


async def test_local_executor_cancelled_twice_cancels_its_workers() -> None:
    started = asyncio.Event()

    class Stubborn:
        async def run_one(
            self, item: EvaluationWorkItem, signal: AbortSignal
        ) -> EvaluationRunReport:
            started.set()
            while True:
                try:
                    await asyncio.get_running_loop().create_future()
                except asyncio.CancelledError:
                    if signal.aborted and not asyncio.current_task().cancelling():  # type: ignore[union-attr]
                        continue
                    raise

    items = work_items(load_evaluation_tasks(make_source(1)), 1)
    task = asyncio.ensure_future(
        LocalExecutor().execute(Stubborn(), items, concurrency=1, signal=AbortSignal())  # type: ignore[arg-type]
    )
    await started.wait()
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- Errors and pickling ------------------------------------------------------------------------


def test_error_codes_are_the_ten_of_the_spec() -> None:
    assert EVALUATION_ERROR_CODES == (
        "EVALUATION_INVALID_OPTIONS",
        "EVALUATION_CANCELLED",
        "EVALUATION_WORKSPACE_FAILED",
        "EVALUATION_RUNTIME_FACTORY_FAILED",
        "EVALUATION_RUNTIME_FAILED",
        "EVALUATION_JUDGE_FAILED",
        "EVALUATION_CLOCK_FAILED",
        "EVALUATION_CLEANUP_FAILED",
        "EVALUATION_CLEANUP_TIMEOUT",
        "EVALUATION_INVALID_REPORT",
    )
    error = EvaluationInfrastructureError("EVALUATION_CANCELLED", "stop")
    assert error.name == "EvaluationInfrastructureError"
    assert error.errors == ()
    with pytest.raises(AttributeError):
        error.code = "X"  # type: ignore[misc]


def test_errors_pickle_with_their_aggregate_cause() -> None:
    primary = infra("EVALUATION_RUNTIME_FAILED")
    error = infra("EVALUATION_CLEANUP_FAILED", primary, OSError("disk"))
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is EvaluationInfrastructureError
    assert (copy.code, copy.message) == (error.code, error.message)
    assert isinstance(copy.__cause__, EvaluationCleanupErrors)
    nested = copy.errors
    assert isinstance(nested[0], EvaluationInfrastructureError)
    assert nested[0].code == "EVALUATION_RUNTIME_FAILED"
    assert str(nested[1]) == "disk"
    group = EvaluationCleanupErrors("m", [ValueError("v"), OSError("o")])
    matched, rest = group.split(ValueError)
    assert type(matched) is EvaluationCleanupErrors
    assert type(rest) is EvaluationCleanupErrors


async def test_a_job_with_the_defaults_and_the_fixture_candidate_pickles() -> None:
    source = fixture_source()
    captured: list[EvaluationJob] = []

    class Capturing:
        async def execute(
            self,
            job: EvaluationJob,
            items: tuple[EvaluationWorkItem, ...],
            *,
            concurrency: int,
            signal: AbortSignal,
            on_settled: Any = None,
        ) -> ExecutionResult:
            captured.append(job)
            copy: EvaluationJob = pickle.loads(pickle.dumps(job))
            assert copy == job
            shipped = pickle.loads(pickle.dumps(items))
            return await LocalExecutor().execute(
                copy, shipped, concurrency=concurrency, signal=signal, on_settled=on_settled
            )

    report = await run_evaluation(
        candidate=fixture_candidate(source), tasks=source, executor=Capturing()
    )
    assert serialize_evaluation_report(pickle.loads(pickle.dumps(report))) == FIXTURE_REPORT
    (job,) = captured
    assert job.clock == ZeroClock()
    assert job.cleanup_timer == LoopCleanupTimer()
    assert job.workspace_factory == TemporaryWorkspaceFactory()
    assert job.judge is deterministic_judge
    assert job.cleanup_timeout_ms == 1_000


async def test_the_deterministic_judge_checks_the_signal() -> None:
    controller = AbortController()
    controller.abort(RuntimeError("stop"))
    task: EvaluationTask = load_evaluation_tasks(make_source(1))[0]
    request = JudgeInput(
        task_id=task.id,
        run_id="run-000001",
        prompt=task.prompt,
        expected_public_evidence=task.expected_public_evidence,
        candidate_public_evidence=("42",),
        signal=controller.signal,
    )
    with pytest.raises(RuntimeError, match="stop"):
        deterministic_judge.judge(request)
    empty = dataclasses.replace(request, candidate_public_evidence=())
    with pytest.raises(RuntimeError, match="stop"):
        deterministic_judge.judge(empty)
    passing = dataclasses.replace(request, signal=AbortSignal())
    assert deterministic_judge.judge(passing) == JudgeOutput(
        verdict="pass", public_metrics={"matchedEvidence": 1, "requiredEvidence": 1}
    )


# -- Remaining edges of one run -----------------------------------------------------------------


async def test_an_abort_inside_a_factory_closes_the_coroutine_it_returns() -> None:
    probe = Probe()
    controller = AbortController()

    async def never_awaited() -> Workspace:
        raise AssertionError("closed, never run")

    def factory(input: WorkspaceFactoryInput) -> Awaitable[Workspace]:
        controller.abort()
        return never_awaited()

    error = await failure(
        evaluate(
            probe, Candidate(probe), make_source(1), signal=controller.signal,
            workspace_factory=factory,
        )
    )  # fmt: skip
    assert error.code == "EVALUATION_CANCELLED"


def make_job(probe: Probe, candidate: Any, **overrides: Any) -> EvaluationJob:
    parts: dict[str, Any] = {
        "candidate": candidate,
        "candidate_id": "candidate-a",
        "judge": deterministic_judge,
        "clock": ZeroClock(),
        "workspace_factory": Workspaces(probe),
        "cleanup_timeout_ms": 1000,
        "cleanup_timer": LoopCleanupTimer(),
    }
    parts.update(overrides)
    return EvaluationJob(**parts)


async def test_untyped_failures_in_a_run_are_normalized() -> None:
    probe = Probe()
    job = make_job(probe, Candidate(probe))
    bogus: Any = object()
    with pytest.raises(EvaluationInfrastructureError) as caught:
        await job.run_one(bogus, AbortSignal())
    assert caught.value.code == "EVALUATION_RUNTIME_FAILED"
    assert caught.value.message == "Evaluation infrastructure failed"
    assert isinstance(caught.value.__cause__, AttributeError)
    (item,) = work_items(load_evaluation_tasks(make_source(1)), 1)
    no_task: Any = dataclasses.replace(item, task=None)
    with pytest.raises(EvaluationInfrastructureError) as caught:
        await job.run_one(no_task, AbortSignal())
    assert caught.value.code == "EVALUATION_RUNTIME_FAILED"


async def test_a_runtime_whose_run_is_not_callable_is_disposed() -> None:
    probe = Probe()

    class Broken:
        run = "not callable"

        def dispose(self) -> None:
            probe.log.append("dispose")

    class Factory:
        id = "broken"

        def create_runtime(self, input: RuntimeFactoryInput) -> Broken:
            return Broken()

    error = await failure(evaluate(probe, Factory(), make_source(1)))
    assert error.code == "EVALUATION_RUNTIME_FACTORY_FAILED"
    assert probe.log[-2:] == ["dispose", "cleanup /ws/run-000001"]


async def test_abort_while_the_judge_works_cancels_the_run() -> None:
    probe = Probe()
    controller = AbortController()
    judging = asyncio.Event()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    class Slow:
        async def judge(self, input: JudgeInput) -> JudgeOutput:
            judging.set()
            await gate
            return JudgeOutput(verdict="pass")

    task = asyncio.ensure_future(
        evaluate(probe, Candidate(probe), make_source(1), signal=controller.signal, judge=Slow())
    )
    await judging.wait()
    controller.abort()
    assert (await failure(task)).code == "EVALUATION_CANCELLED"
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]
    gate.set_result(None)
    await asyncio.sleep(0)


async def test_cancelled_during_cleanup_the_rest_is_released_in_the_background() -> None:
    probe = Probe()
    disposing = asyncio.Event()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    released: list[str] = []

    class HangingDispose:
        async def run(self, input: EvaluationRuntimeInput) -> object:
            return EvaluationCompleted(public_evidence=("42",))

        async def dispose(self) -> None:
            disposing.set()
            await gate

    class Factory:
        id = "hanging"

        def create_runtime(self, input: RuntimeFactoryInput) -> HangingDispose:
            return HangingDispose()

    class Raising:
        path = "/ws/raising"

        def cleanup(self) -> None:
            released.append("cleanup")
            raise OSError("cleanup failed in the background")

    def workspace(input: WorkspaceFactoryInput) -> Raising:
        return Raising()

    timer = FakeTimer()
    job = make_job(probe, Factory(), workspace_factory=workspace, cleanup_timer=timer)
    (item,) = work_items(load_evaluation_tasks(make_source(1)), 1)
    task = asyncio.ensure_future(job.run_one(item, AbortSignal()))
    await disposing.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert released == ["cleanup"]
    assert [entry.cancelled for entry in timer.scheduled] == [1]
    gate.set_result(None)
    await asyncio.sleep(0)


async def test_a_cleanup_raising_a_bare_base_exception_is_wrapped() -> None:
    probe = Probe()

    class Odd:
        path = "/ws/odd"

        async def cleanup(self) -> None:
            raise Fatal

    def workspace(input: WorkspaceFactoryInput) -> Odd:
        return Odd()

    error = await failure(
        evaluate(probe, Candidate(probe), make_source(1), workspace_factory=workspace)
    )
    (nested,) = error.errors
    assert isinstance(nested, EvaluationInfrastructureError)
    assert nested.code == "EVALUATION_CLEANUP_FAILED"
    assert isinstance(nested.__cause__, Fatal)


def test_fixture_candidate_rejects_invalid_task_lists() -> None:
    with pytest.raises(TypeError, match="must be an object"):
        fixture_candidate([{"id": "x"}])


async def test_local_executor_refuses_a_signal_it_cannot_follow() -> None:
    items = work_items(load_evaluation_tasks(make_source(1)), 1)
    bogus: Any = object()
    with pytest.raises(TypeError, match="signal must be an AbortSignal"):
        await LocalExecutor().execute(bogus, items, concurrency=1, signal=bogus)


async def test_cancelled_error_raised_by_caller_code_is_a_step_failure() -> None:
    probe = Probe()

    async def raises_cancelled(_input: EvaluationRuntimeInput) -> object:
        raise asyncio.CancelledError

    error = await failure(evaluate(probe, Candidate(probe, raises_cancelled), make_source(1)))
    assert error.code == "EVALUATION_RUNTIME_FAILED"
    assert probe.log[-2:] == ["dispose run-000001", "cleanup /ws/run-000001"]

    candidate = Candidate(probe, factory_error=cast(Exception, asyncio.CancelledError()))
    error = await failure(evaluate(probe, candidate, make_source(1)))
    assert error.code == "EVALUATION_RUNTIME_FACTORY_FAILED"
    assert probe.log[-1] == "cleanup /ws/run-000001"


async def test_after_an_external_abort_the_cleanup_aggregate_keeps_the_cancellation_first() -> None:
    """The run is cancelled from outside while it runs, then its runtime's dispose fails: the
    evaluation fails EVALUATION_CLEANUP_FAILED whose aggregate starts with the cancellation
    (the initiating failure), then the cleanup failure."""
    probe = Probe()
    controller = AbortController()
    running = asyncio.Event()
    refused = OSError("dispose refused")

    async def waits(input: EvaluationRuntimeInput) -> object:
        running.set()
        await input.signal.wait()
        raise AssertionError("unreachable: the abort wins the race")

    candidate = Candidate(probe, waits, dispose_errors={"run-000001": refused})
    task = asyncio.ensure_future(
        evaluate(probe, candidate, make_source(1), signal=controller.signal)
    )
    await running.wait()
    controller.abort(RuntimeError("stop the evaluation"))
    error = await failure(task)
    assert error.code == "EVALUATION_CLEANUP_FAILED"
    codes = [getattr(nested, "code", None) for nested in error.errors]
    assert codes[0] == "EVALUATION_CANCELLED"
    assert error.errors[1:] == (refused,)
