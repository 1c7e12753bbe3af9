"""The workshop's offline candidate: it answers each task with the task's fixture evidence.

``fixture_candidate(tasks)`` remembers, by task ID, the ``candidate_public_evidence`` of the
tasks it is built with; its runtime never sees more than any runtime does (the prompt and a
signal) and answers from that table. With the bundled fixture (``fixtures/eval-tasks.json``)
it gives one pass and one fail. A task it was not built with gets a ``failed`` output with
``UNKNOWN_TASK``. Everything here is a module-level frozen dataclass, so the candidate pickles
(the Ray executor ships it to workers).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, cast

from tether._async.race import check_signal
from tether._base.dataclass import dataclass
from tether.evals.tasks import load_evaluation_tasks
from tether.evals.types import (
    EvaluationCompleted,
    EvaluationFailed,
    EvaluationRuntimeInput,
    EvaluationRuntimeOutput,
    EvaluationTask,
    RuntimeFactoryInput,
)

__all__ = ["FIXTURE_CANDIDATE_ID", "FixtureCandidate", "FixtureRuntime", "fixture_candidate"]

FIXTURE_CANDIDATE_ID: Final = "fixture-candidate"
"""The ``id`` of ``fixture_candidate(...)`` (and so the report's ``candidateId``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureRuntime:
    """One run's runtime: answers with ``evidence`` (``None``: an unknown task)."""

    evidence: tuple[str, ...] | None

    async def run(self, input: EvaluationRuntimeInput, /) -> EvaluationRuntimeOutput:
        """Answer from the table, after checking the signal."""
        check_signal(input.signal)
        if self.evidence is None:
            return EvaluationFailed(error_code="UNKNOWN_TASK")
        return EvaluationCompleted(public_evidence=self.evidence)

    def dispose(self) -> None:
        """Nothing to release."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureCandidate:
    """The offline candidate; ``answers`` pairs task IDs with their fixture evidence."""

    id: str = FIXTURE_CANDIDATE_ID
    answers: tuple[tuple[str, tuple[str, ...]], ...]

    def create_runtime(self, input: RuntimeFactoryInput, /) -> FixtureRuntime:
        """A runtime for ``input.task_id``."""
        for task_id, evidence in self.answers:
            if task_id == input.task_id:
                return FixtureRuntime(evidence=evidence)
        return FixtureRuntime(evidence=None)


def fixture_candidate(
    tasks: Iterable[EvaluationTask] | object, *, id: str = FIXTURE_CANDIDATE_ID
) -> FixtureCandidate:
    """The fixture candidate for ``tasks``: loaded tasks, or a fixture source to load
    (``load_evaluation_tasks`` rules; ``TypeError`` if invalid)."""
    if type(tasks) is tuple or type(tasks) is list:
        items = cast("Sequence[object]", tasks)
        if items and all(type(task) is EvaluationTask for task in items):
            loaded = cast("tuple[EvaluationTask, ...]", tuple(items))
            return FixtureCandidate(
                id=id, answers=tuple((task.id, task.candidate_public_evidence) for task in loaded)
            )
    loaded = load_evaluation_tasks(cast("object", tasks))
    return FixtureCandidate(
        id=id, answers=tuple((task.id, task.candidate_public_evidence) for task in loaded)
    )
