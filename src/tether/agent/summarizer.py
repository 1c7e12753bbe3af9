"""A ``ContextSummarizer`` that asks a model: ``model_summarizer(model)``.

``compact_context`` takes any summarizer; this is the one a real agent uses. Each call renders
the compacted prefix as one bounded text prompt (``render_summary_prompt``) and runs one
model step through ``run_agent_loop`` (no tools, ``max_steps=1``), so every boundary check of
the loop applies to the reply. The rules:

* **Bounded prompt.** Requirements, the previous summary and every message are rendered as
  plain text: a tool call as ``[tool call NAME #ID] {json arguments}``, a result as
  ``[tool result NAME #ID] content`` (``tool error`` when it failed). Each item is cut to
  ``max_item_code_points`` (a note says how much was cut); if the whole prompt would exceed
  ``max_prompt_units`` code points, messages from the middle of the excerpt are left out
  (the first and the latest ones are what a summary needs most) and a note says how many.
* **The answer fits.** The prompt asks for at most ``request.max_content_code_points``
  characters. A longer answer is cut at a word boundary and ends with ``…``, so a model
  that overshoots does not fail the compaction; ``compact_context`` checks the result anyway.
* **Failures raise.** A run that does not complete (the model failed, refused, was cut off,
  asked for a tool, or was cancelled), an empty answer, or a request that leaves no room for
  any summary raises ``ContextCompactionError("CONTEXT_SUMMARIZER_FAILED")``, which
  ``compact_context`` reports as ``CONTEXT_SUMMARIZER_FAILED`` (or ``CONTEXT_CANCELLED``
  when its signal aborted).
"""

from __future__ import annotations

import json
from typing import Final

from tether._base.exact_types import type_of
from tether._base.strings import code_points
from tether.abort import AbortSignal
from tether.agent.compaction import (
    ContextCompactionError,
    ContextSummarizer,
    ContextSummaryRequest,
)
from tether.jsonvalue import thaw_json
from tether.loop import RunLimits, run_agent_loop
from tether.models.base import Model
from tether.models.limits import check_positive
from tether.protocol import Message, UserMessage, assert_never
from tether.tools import ToolRegistry

__all__ = [
    "DEFAULT_MAX_ITEM_CODE_POINTS",
    "DEFAULT_MAX_PROMPT_UNITS",
    "DEFAULT_SUMMARY_SYSTEM",
    "model_summarizer",
    "render_summary_prompt",
]

DEFAULT_MAX_PROMPT_UNITS: Final = 200_000
"""Code points of the rendered prompt (about 50,000 tokens at four code points per token)."""
DEFAULT_MAX_ITEM_CODE_POINTS: Final = 4_000
"""Code points kept of any one message text, tool argument object or tool result."""
DEFAULT_SUMMARY_SYSTEM: Final = (
    "You compact the context of an AI coding agent. You receive an excerpt of its "
    "conversation and write a summary that replaces the excerpt, so the agent can continue "
    "the work without it. Keep what the work depends on: the user's goals, constraints and "
    "preferences; decisions and their reasons; files, commands, identifiers and values that "
    "matter, written exactly; tool results and errors, and how errors were resolved; what is "
    "done and what remains. Leave out pleasantries and anything superseded. Never invent "
    "facts. Reply with the summary text only, without a preamble."
)
"""The system prompt ``model_summarizer`` sends unless told otherwise."""

_PROMPT_ID: Final = "context-summary-request"
_ELLIPSIS: Final = "…"


def model_summarizer(
    model: Model,
    *,
    system: str | None = None,
    max_prompt_units: int = DEFAULT_MAX_PROMPT_UNITS,
    max_item_code_points: int = DEFAULT_MAX_ITEM_CODE_POINTS,
    limits: RunLimits | None = None,
) -> ContextSummarizer:
    """A summarizer that asks ``model`` for each summary (see the module docstring).

    ``system`` replaces ``DEFAULT_SUMMARY_SYSTEM``; ``max_prompt_units`` bounds the rendered
    prompt and ``max_item_code_points`` each item in it (code points); ``limits`` bounds the
    model step (``RunLimits.for_real_models()`` by default: a real model streams a chunk per
    token). Arguments are checked now (``TypeError``).
    """
    try:
        open_stream = model.stream
    except Exception:
        open_stream = None
    if not callable(open_stream):
        raise TypeError(
            "model must implement the Model contract (a stream(request, signal) method)"
        )
    if system is not None and type_of(system) is not str:
        raise TypeError("system must be a string or None")
    check_positive(max_prompt_units, "max_prompt_units")
    check_positive(max_item_code_points, "max_item_code_points")
    chosen = RunLimits.for_real_models() if limits is None else limits
    if type_of(chosen) is not RunLimits:
        raise TypeError("limits must be a RunLimits or None")
    system_text = DEFAULT_SUMMARY_SYSTEM if system is None else system

    async def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        """Ask the model for a summary of ``request`` within its budget."""
        limit = request.max_content_code_points
        if limit < 1:
            raise ContextCompactionError(
                "CONTEXT_SUMMARIZER_FAILED",
                f"The summary budget ({request.max_summary_units} units) leaves no room for text",
            )
        prompt = render_summary_prompt(
            request, max_prompt_units=max_prompt_units, max_item_code_points=max_item_code_points
        )
        run = run_agent_loop(
            messages=(UserMessage(id=_PROMPT_ID, content=prompt),),
            model=model,
            tools=ToolRegistry(),
            max_steps=1,
            signal=signal,
            system=system_text,
            limits=chosen,
        )
        result = await run.result
        if result.status == "completed":
            text = result.final_text.strip()
            if not text:
                raise ContextCompactionError(
                    "CONTEXT_SUMMARIZER_FAILED", "The summary model answered with no text"
                )
            return _fit(text, limit)
        if result.status == "failed":
            detail = f"failed ({result.error.code}: {result.error.message})"
        elif result.status == "cancelled":
            detail = f"was cancelled ({result.reason})"
        elif result.status == "maxSteps":
            detail = "asked for a tool instead of answering"
        else:
            assert_never(result)
        raise ContextCompactionError("CONTEXT_SUMMARIZER_FAILED", f"The summary model run {detail}")

    return summarize


def render_summary_prompt(
    request: ContextSummaryRequest,
    *,
    max_prompt_units: int = DEFAULT_MAX_PROMPT_UNITS,
    max_item_code_points: int = DEFAULT_MAX_ITEM_CODE_POINTS,
) -> str:
    """The user prompt ``model_summarizer`` sends for ``request``, at most
    ``max_prompt_units`` code points long (see the module docstring for the rendering)."""
    check_positive(max_prompt_units, "max_prompt_units")
    check_positive(max_item_code_points, "max_item_code_points")
    item = max_item_code_points
    head = [
        "Summarize the conversation excerpt below. Your summary replaces these messages in "
        "the agent's context.",
        f"Write at most {request.max_content_code_points} characters of plain text.",
    ]
    if request.requirements:
        head.append(
            "<requirements>\nThese stay in the context verbatim: do not repeat them, and keep "
            "the summary consistent with them.\n"
            + "\n".join(
                f"- {_cut(requirement.id, item)}: {_cut(requirement.content, item)}"
                for requirement in request.requirements
            )
            + "\n</requirements>"
        )
    if request.previous_summary is not None:
        head.append(
            "<previous-summary>\nThe summary of the work before this excerpt: fold it into "
            "your new summary.\n"
            + _cut(request.previous_summary.content, max(item, max_prompt_units // 4))
            + "\n</previous-summary>"
        )
    opening = f'<conversation messages="{len(request.messages)}">'
    closing = "</conversation>"
    fixed = "\n\n".join([*head, opening]) + "\n" + closing
    lines = [_render(message, item) for message in request.messages]
    room = max_prompt_units - len(fixed) - 1
    body = _fit_lines(lines, room)
    prompt = "\n\n".join([*head, opening]) + "\n" + body + ("\n" if body else "") + closing
    return prompt if len(prompt) <= max_prompt_units else prompt[:max_prompt_units]


def _cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` code points and a note of how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{_ELLIPSIS} [{len(text) - limit} more characters]"


def _render(message: Message, limit: int) -> str:
    """One message as plain text lines (its blocks in order)."""
    if message.role == "user":
        return f"[user] {_cut(message.content, limit)}"
    if message.role == "toolResult":
        label = "tool error" if message.is_error else "tool result"
        return (
            f"[{label} {message.tool_name} #{message.tool_call_id}] {_cut(message.content, limit)}"
        )
    if message.role != "assistant":
        assert_never(message)
    parts: list[str] = []
    for block in message.content:
        if block.type == "text":
            if block.text.strip():
                parts.append(f"[assistant] {_cut(block.text, limit)}")
        elif block.type == "thinking":
            if block.text.strip() and not block.redacted:
                parts.append(f"[assistant thinking] {_cut(block.text, limit)}")
        elif block.type == "toolCall":
            arguments = (
                json.dumps(thaw_json(block.arguments), ensure_ascii=False, separators=(",", ":"))
                if block.raw_arguments is None
                else f"(invalid arguments) {block.raw_arguments}"
            )
            parts.append(f"[tool call {block.name} #{block.id}] {_cut(arguments, limit)}")
        else:
            assert_never(block)
    return "\n".join(parts) if parts else "[assistant] (no text)"


def _fit_lines(lines: list[str], room: int) -> str:
    """Every line if they fit ``room``; else the first and the latest lines that fit, with a
    note in place of the messages left out between them."""
    joined = "\n".join(lines)
    if len(joined) <= room:
        return joined
    budget = max(0, room - _MARKER_ROOM)
    head = _take(lines, budget // 3)
    spent = sum(len(line) + 1 for line in head)
    tail = _take(lines[len(head) :][::-1], budget - spent)[::-1]
    omitted = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"[… {omitted} messages left out …]", *tail])


_MARKER_ROOM: Final = 48
"""Room kept for the note that says how many messages were left out."""


def _take(lines: list[str], budget: int) -> list[str]:
    """The longest leading run of ``lines`` that fits ``budget`` (a newline each)."""
    used = 0
    for count, line in enumerate(lines):
        used += len(line) + 1
        if used > budget:
            return lines[:count]
    return lines


def _fit(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` code points, else cut at a word boundary (when
    one is near the end) with ``…`` appended, within ``limit``."""
    if code_points(text)[0] <= limit:
        return text
    if limit == 1:
        return _ELLIPSIS
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= (limit - 1) * 4 // 5:
        cut = cut[:space]
    return cut.rstrip() + _ELLIPSIS
