"""Running an evaluation: option capture, the per-run job, and the evaluation's outcome.

``run_evaluation`` validates its options once (``EVALUATION_INVALID_OPTIONS``), refuses an
already aborted signal (``EVALUATION_CANCELLED``), builds the work items (each task in fixture
order, repetitions 1..R, run IDs ``run-000001``, ...) and one ``EvaluationJob``, and lets an
executor (``LocalExecutor`` by default) run them. ``EvaluationJob.run_one`` is checkpoint 14's
``runOne``: clock, workspace, runtime, run, judge, then cleanup in ownership order (runtime
``dispose``, then workspace ``cleanup``), each at most once, each bounded by the cleanup
timer and never skipped, whatever happened before.

Every awaitable produced by caller code (workspace factory, ``create_runtime``, ``run``,
``judge``) is raced against the shared signal: on abort the run fails with
``EVALUATION_CANCELLED`` at once, and a workspace or runtime that still arrives later is
cleaned up (its failures swallowed). The abandoned work is not cancelled (it has the signal to
stop on); strong references keep it alive until it settles.

What a run is handed: a work item carries an ``EvaluationWorkTask`` (task ID, prompt, required
evidence), never the task's fixture-only fields (``candidate_public_evidence``,
``expected_verdict``), so those stay in the driver and never travel to a Ray worker; the runtime
gets ``EvaluationRuntimeInput`` (prompt and signal) and the judge ``JudgeInput``. That is the
whole boundary: an in-process candidate is *trusted code*. It runs in the interpreter of its run
(locally, the driver's), and code that walks that interpreter (coroutine frames, the task list,
the garbage collector) can reach anything the process holds, the required evidence handed to
the judge included. This is not a sandbox; isolate untrusted candidates in another process.

If the run's own task is cancelled (not the signal: the task), the resources it acquired are
released by one background coroutine, in ownership order and under the cleanup timer, as
they would have been; their failures are then swallowed (nobody is left to report them to).

The job is picklable (the Ray executor ships it): the defaults (``ZeroClock``,
``LoopCleanupTimer``, ``TemporaryWorkspaceFactory``) are module-level classes, and the default
workspace is a temporary directory made on whichever machine runs the item.

The package's modules, one job each: ``_defaults`` (the default clock, timer and workspace
factory), ``_steps`` (a step's failure and the errors it becomes), ``_settle`` (caller values
raced against the signal, late values cleaned up), ``_capture`` (what a run produced,
validated), ``_job`` (``EvaluationJob``: one run and its cleanup), ``_options`` (option
capture and the work items) and ``_run`` (``run_evaluation`` and its outcome).
"""

from __future__ import annotations

from tether.evals.runner._defaults import (
    LoopCleanupTimer,
    MonotonicClock,
    TemporaryWorkspace,
    TemporaryWorkspaceFactory,
    ZeroClock,
)
from tether.evals.runner._job import EvaluationJob
from tether.evals.runner._options import OnRun

# work_items is not in __all__ (not re-exported by tether); the CLI and tests import it here
from tether.evals.runner._options import work_items as work_items
from tether.evals.runner._run import run_evaluation

__all__ = [
    "EvaluationJob",
    "LoopCleanupTimer",
    "MonotonicClock",
    "OnRun",
    "TemporaryWorkspace",
    "TemporaryWorkspaceFactory",
    "ZeroClock",
    "run_evaluation",
]
