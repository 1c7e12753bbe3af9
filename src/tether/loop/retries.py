"""Retry budgets: how many failed calls in a row each tool allows in one run.

A tool's budget is its own ``retries`` (``@tool(retries=...)``), else the run's
``tool_retries``; ``None`` for both (the default) means unbounded, and then no budget is kept
at all. Every ``is_error`` result of a tool counts (a ``ModelRetry``, invalid arguments, an
exception, a blocked call); a successful result resets that tool's count. The failure past
the budget ends the run with ``TOOL_RETRIES_EXHAUSTED`` after its result is recorded.
"""

from __future__ import annotations

from typing import Final

from tether.loop.checks import RunFailure
from tether.protocol import MAX_SAFE_INTEGER, ToolResultMessage
from tether.tools import ToolRegistry

__all__ = ["RetryBudget", "ToolRetriesExhausted", "check_tool_retries"]

_HINT: Final = (
    "raise the tool's budget with @tool(retries=...) or define_tool(retries=...), or the "
    "run's default with tool_retries=... (run_agent_loop or Agent); or make the tool's error "
    "message say what the model should change"
)


class ToolRetriesExhausted(RunFailure):
    code = "TOOL_RETRIES_EXHAUSTED"


def check_tool_retries(value: object) -> int | None:
    """``tool_retries`` as given: ``None`` or a non-negative safe ``int`` (``TypeError``)."""
    if value is not None and (type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER):
        raise TypeError("tool_retries must be None or a non-negative int")
    return value


class RetryBudget:
    """The failed-call counts of one run (for the ``Agent``, one logical run)."""

    __slots__ = ("_default", "_failures", "_limits")

    def __init__(self, limits: dict[str, int], default: int | None) -> None:
        self._limits = limits
        self._default = default
        self._failures: dict[str, int] = {}

    @staticmethod
    def for_run(registry: ToolRegistry, default: int | None) -> RetryBudget | None:
        """The budget of a run over ``registry``, or ``None`` when nothing is bounded."""
        limits: dict[str, int] = {}
        for name in registry.names:
            definition = registry.get(name)
            if definition is not None and definition.retries is not None:
                limits[name] = definition.retries
        if default is None and not limits:
            return None
        return RetryBudget(limits, default)

    def record(self, result: ToolResultMessage) -> None:
        """Count ``result``; raises ``ToolRetriesExhausted`` past its tool's budget."""
        name = result.tool_name
        if not result.is_error:
            self._failures.pop(name, None)
            return
        allowed = self._limits.get(name, self._default)
        if allowed is None:
            return
        failures = self._failures.get(name, 0) + 1
        self._failures[name] = failures
        if failures > allowed:
            raise ToolRetriesExhausted(
                f'Tool "{name}" failed {failures} times in a row; its budget is {allowed} '
                f"retr{'y' if allowed == 1 else 'ies'}",
                _HINT,
            )
