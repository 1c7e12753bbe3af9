"""Mutations and contract violations the protocol must reject at type-check time.

Every ``# pyright: ignore[rule]`` below marks an error pyright MUST report on that line: with
``reportUnnecessaryTypeIgnoreComment = "error"`` an ignore that suppresses nothing is itself an
error, so this file type-checks clean only if every line still fails. (The Python analogue of
the workshop's ``@ts-expect-error`` block.) tests/typing/test_static_contract.py also strips the
comments and checks each line's rule.
"""

from tether import (
    AbortController,
    AssistantMessage,
    CompletedRunResult,
    FailedRunResult,
    JsonObject,
    RunError,
    TextBlock,
    ToolCall,
    ToolExecutionContext,
    UserMessage,
    Valid,
)
from tether.protocol import MessageAcceptedEvent, MessageAcceptedPayload, Tool, ToolValidation

user = UserMessage(id="message-1", content="What is 20 + 22?")
assistant = AssistantMessage(id="message-2", content=(TextBlock(text="Adding."),))
tool_call = ToolCall(id="call-1", name="add", arguments=JsonObject({"nested": {"x": [1]}}))
failed = FailedRunResult(
    messages=(user,), error=RunError(code="MODEL_STREAM_FAILED", message="boom")
)
event = MessageAcceptedEvent(sequence=0, payload=MessageAcceptedPayload(message=user))

# A message ID cannot be reassigned.
user.id = "message-3"  # pyright: ignore[reportAttributeAccessIssue]

# Assistant content is a tuple: nothing to append to.
assistant.content.append(TextBlock(text="more"))  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]

# Tool arguments are an immutable JSON object, at every depth.
tool_call.arguments["x"] = 1  # pyright: ignore[reportIndexIssue]
nested = tool_call.arguments["nested"]
if isinstance(nested, JsonObject):
    nested["x"] = 2  # pyright: ignore[reportIndexIssue]

# Terminal error data and event payloads cannot be rewritten.
failed.error.code = "OTHER"  # pyright: ignore[reportAttributeAccessIssue]
event.payload = MessageAcceptedPayload(message=user)  # pyright: ignore[reportAttributeAccessIssue]

# A run error's code is one of the codes a run can fail with.
unknown_code = RunError(code="MODEL_FAILED", message="boom")  # pyright: ignore[reportArgumentType]

# A completed run's output has the run's output type.
typed: CompletedRunResult[int] = CompletedRunResult(messages=(), final_text="", output=1)
wrong: str = typed.output  # pyright: ignore[reportAssignmentType]

# "running" is not a run status.
running = CompletedRunResult(status="running", messages=(), final_text="")  # pyright: ignore[reportArgumentType]


class NarrowValidator:
    """validate() accepts less than ``object``: the tool would trust model output."""

    name = "add"
    description = "Adds two integers."

    def validate(self, input: dict[str, int], /) -> ToolValidation[int]:
        return Valid(value=input["left"] + input["right"])

    async def execute(self, input: int, context: ToolExecutionContext, /) -> int:
        return input


class SynchronousExecute:
    """execute() is not asynchronous."""

    name = "add"
    description = "Adds two integers."

    def validate(self, input: object, /) -> ToolValidation[int]:
        return Valid(value=0)

    def execute(self, input: int, context: ToolExecutionContext, /) -> int:
        return input


narrow: Tool[int, int] = NarrowValidator()  # pyright: ignore[reportAssignmentType]
synchronous: Tool[int, int] = SynchronousExecute()  # pyright: ignore[reportAssignmentType]

# A signal's state is read-only; only its controller may abort it.
AbortController().signal.aborted = True  # pyright: ignore[reportAttributeAccessIssue]
