"""The positive controls: exhaustive matches and a correct tool type-check with no diagnostics."""

from typing import Literal, assert_type

from tether import AgentEvent, Invalid, Message, ModelChunk, RunResult, ToolExecutionContext, Valid
from tether.protocol import (
    AssistantBlock,
    StopReason,
    TextDeltaChunk,
    Tool,
    ToolValidation,
    assert_never,
)


def describe_run(result: RunResult) -> str:
    """The seed's describeRun: one branch per status, ``never`` in the default."""
    match result.status:
        case "completed":
            assert_type(result.status, Literal["completed"])
            return result.final_text
        case "cancelled":
            return result.reason
        case "maxSteps":
            return str(result.max_steps)
        case "failed":
            return result.error.code
        case _:
            return assert_never(result)


def describe_message(message: Message) -> str:
    match message.role:
        case "user":
            return message.content
        case "assistant":
            return str(len(message.content))
        case "toolResult":
            return message.tool_call_id
        case _:
            return assert_never(message)


def describe_block(block: AssistantBlock) -> str:
    match block.type:
        case "text":
            return block.text
        case "thinking":
            return block.signature or block.text
        case "toolCall":
            return block.name
        case _:
            return assert_never(block)


def describe_chunk(chunk: ModelChunk) -> str:
    match chunk.type:
        case "textDelta":
            return chunk.delta
        case "thinkingDelta":
            return chunk.delta
        case "toolCallDelta":
            return chunk.arguments_delta
        case "toolCall":
            return chunk.tool_call.id
        case _:
            return assert_never(chunk)


def describe_stop(reason: StopReason) -> str:
    match reason:
        case "stop":
            return "answered"
        case "toolCall":
            return "tools"
        case "length":
            return "truncated"
        case "refusal":
            return "refused"
        case _:
            return assert_never(reason)


def describe_event(event: AgentEvent) -> str:
    match event.type:
        case "message.accepted":
            return event.payload.message.id
        case "model.chunk":
            return event.payload.chunk.request_id
        case "model.retry":
            return event.payload.request_id
        case "tool.started":
            return event.payload.tool_call.id
        case "tool.progress":
            return event.payload.tool_call_id
        case "tool.finished":
            return event.payload.message.tool_call_id
        case "run.finished":
            return event.payload.result.status
        case _:
            return assert_never(event)


assert_type(TextDeltaChunk(request_id="r", delta="x").type, Literal["textDelta"])


class AddTool:
    name = "add"
    description = "Adds two integers."

    def validate(self, input: object, /) -> ToolValidation[int]:
        if isinstance(input, int):
            return Valid(value=input)
        return Invalid(error="expected an integer")

    async def execute(self, input: int, context: ToolExecutionContext, /) -> int:
        context.signal.throw_if_aborted()
        return input + 1


add: Tool[int, int] = AddTool()
