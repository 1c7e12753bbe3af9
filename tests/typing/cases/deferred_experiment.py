"""The workshop's failure experiment: a fifth run result that a switch forgets.

``RunResult`` gains ``DeferredRunResult``; ``describe_run`` still handles only the four original
statuses, so the value reaching ``assert_never`` is no longer ``Never`` and pyright must report
exactly one error, on the ``assert_never(result)`` line of ``describe_run``.
``describe_run_fixed`` handles the new member and type-checks clean.
"""

from dataclasses import dataclass
from typing import Literal, TypeAlias

from tether import Message, RunResult
from tether.protocol import assert_never


@dataclass(frozen=True, slots=True, kw_only=True)
class DeferredRunResult:
    status: Literal["deferred"] = "deferred"
    messages: tuple[Message, ...]
    resume_token: str


ExtendedRunResult: TypeAlias = RunResult | DeferredRunResult


def describe_run(result: ExtendedRunResult) -> str:
    match result.status:
        case "completed":
            return result.final_text
        case "cancelled":
            return result.reason
        case "maxSteps":
            return str(result.max_steps)
        case "failed":
            return result.error.code
        case _:
            # EXPECTED-ERROR(reportArgumentType) next line: DeferredRunResult is not Never
            return assert_never(result)


def describe_run_fixed(result: ExtendedRunResult) -> str:
    match result.status:
        case "completed":
            return result.final_text
        case "cancelled":
            return result.reason
        case "maxSteps":
            return str(result.max_steps)
        case "failed":
            return result.error.code
        case "deferred":
            return result.resume_token
        case _:
            return assert_never(result)
