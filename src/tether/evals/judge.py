"""The default judge: exact matching of public evidence, with no model call.

A run passes when every required evidence item appears, exactly, among the evidence the
candidate produced. The judge sees only ``JudgeInput`` (public evidence on both sides, the
prompt and identifiers), never a candidate's internals, and checks the signal per item so a
cancelled evaluation stops it promptly. Its metrics: ``matchedEvidence`` (required items
found) and ``requiredEvidence`` (required items in total).
"""

from __future__ import annotations

from typing import Final

from tether._async.race import check_signal
from tether._base.dataclass import dataclass
from tether.evals.types import JudgeInput, JudgeOutput, PublicMetrics

__all__ = ["DeterministicEvaluationJudge", "deterministic_judge"]


@dataclass(frozen=True, slots=True)
class DeterministicEvaluationJudge:
    """Exact-match judge (see the module docstring); stateless, so any instance will do."""

    def judge(self, input: JudgeInput, /) -> JudgeOutput:
        """``pass`` iff every required item is among the candidate's evidence."""
        produced: set[str] = set()
        for item in input.candidate_public_evidence:
            check_signal(input.signal)
            produced.add(item)
        required = input.expected_public_evidence.includes
        matched = 0
        for item in required:
            check_signal(input.signal)
            if item in produced:
                matched += 1
        return JudgeOutput(
            verdict="pass" if matched == len(required) else "fail",
            public_metrics=PublicMetrics(
                {"matchedEvidence": float(matched), "requiredEvidence": float(len(required))}
            ),
        )


deterministic_judge: Final = DeterministicEvaluationJudge()
"""The default judge of ``run_evaluation``."""
