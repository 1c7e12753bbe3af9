"""The loop's side of structured output (``run_agent_loop(..., output_type=...)``).

The output is offered as one more tool (``tether.tools.output``, ``final_result``). When the
model calls it, the call is answered in the transcript like any tool call: valid arguments
with ``"Final result accepted"`` (and the run completes with the validated ``output`` after
the batch; calls after it in the same message are answered ``TOOL_CALL_NOT_RUN`` and not
run), invalid ones with an ``is_error`` result ``OUTPUT_INVALID`` carrying the validation
error. A plain text answer is answered with a user message asking for the tool. Each invalid
call or text answer is one output retry; the one past ``output_retries`` ends the run with
``OUTPUT_RETRIES_EXHAUSTED``.
"""

from __future__ import annotations

from typing import Any, Final

from tether.loop.checks import RunFailure
from tether.protocol import MAX_SAFE_INTEGER, ToolCall, ToolResultMessage, UserMessage
from tether.protocol import _trusted as trusted
from tether.tools import ToolRegistry
from tether.tools.output import OutputSpec, output_spec
from tether.tools.serialize import serialize_output

__all__ = ["NO_OUTPUT", "OutputRetriesExhausted", "OutputState"]

NO_OUTPUT: Final = object()
"""No final result accepted yet."""

ACCEPTED: Final = "Final result accepted"
_NOT_RUN: Final = serialize_output(
    {"error": {"code": "TOOL_CALL_NOT_RUN", "message": "Not run: the final result was given"}}
)
_HINT: Final = (
    "raise output_retries (run_agent_loop or Agent.run), or describe the output better: "
    "field names, docstrings and Annotated[..., 'description'] reach the model as its schema"
)


class OutputRetriesExhausted(RunFailure):
    code = "OUTPUT_RETRIES_EXHAUSTED"


class OutputState:
    """One run's structured output: its spec and the retries used (for the ``Agent``, one
    logical run's)."""

    __slots__ = ("failures", "name", "retries", "spec")

    def __init__(self, spec: OutputSpec[Any], retries: int) -> None:
        self.spec = spec
        self.name = spec.tool.name
        self.retries = retries
        self.failures = 0

    @staticmethod
    def for_run(output_type: object, retries: object, registry: ToolRegistry) -> OutputState | None:
        """The state of a run with ``output_type`` (``None`` without one). ``TypeError`` for
        a type that cannot be described, bad ``retries``, or a tool already named like the
        output tool."""
        if type(retries) is not int or not 0 <= retries <= MAX_SAFE_INTEGER:
            raise TypeError("output_retries must be a non-negative int")
        if output_type is None:
            return None
        spec: OutputSpec[Any] = output_spec(output_type)
        if spec.tool.name in registry:
            raise TypeError(
                f'a tool is already named "{spec.tool.name}", the structured output\'s tool'
            )
        return OutputState(spec, retries)

    def answer(self, call: ToolCall, given: bool) -> tuple[ToolResultMessage, object]:
        """The result of a call of the output tool (or of any call once ``given``), and the
        validated output or ``NO_OUTPUT``. Raises nothing: ``failed`` counts a retry."""
        if given:
            return trusted.tool_result(call, _NOT_RUN, True), NO_OUTPUT
        if call.raw_arguments is not None:  # the model's text was not a JSON object
            error = "the arguments must be a JSON object matching the tool's schema"
        else:
            decision = self.spec.validate(call.arguments)
            if decision.ok is True:
                return trusted.tool_result(call, ACCEPTED, False), decision.value
            error = decision.error
        content = serialize_output({"error": {"code": "OUTPUT_INVALID", "message": error}})
        return trusted.tool_result(call, content, True), NO_OUTPUT

    def failed(self, what: str) -> None:
        """Count one output retry; ``OutputRetriesExhausted`` past the budget."""
        self.failures += 1
        if self.failures > self.retries:
            raise OutputRetriesExhausted(
                f"The model gave no valid final result after {self.failures} tries "
                f"(output_retries={self.retries}; last: {what})",
                _HINT,
            )

    def reminder(self, request_id: str) -> UserMessage:
        """The user message answering a text reply (after ``failed`` counted it)."""
        return UserMessage(
            id=f"output-retry-{request_id}",
            content=(
                f"Plain text is not accepted: give your final answer by calling the "
                f"{self.name} tool with arguments matching its schema."
            ),
        )
