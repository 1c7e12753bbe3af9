"""How the loop answers an invalid tool call (``ToolCall.raw_arguments`` set).

A provider that receives argument text that is not a JSON object keeps the call with that
text instead of failing the response. The loop never executes such a call, never asks a
hook about it, and answers it with an error result whose text starts
``TOOL_ARGUMENTS_INVALID:``, says where the JSON is broken and quotes the start of what the
model sent (Anthropic's ``input`` must be an object, so that is the only place an Anthropic
model sees its text again), so the model can send the call again.
"""

from __future__ import annotations

import json
from typing import Final

from tether.protocol import ToolCall, ToolResultMessage
from tether.protocol import _trusted as trusted

__all__ = ["describe_raw_arguments", "invalid_call_result"]

_QUOTED: Final = 200
"""Most code points of the model's text quoted in the result."""
_AFTER: Final = 40
"""Code points quoted after the broken spot (the rest of ``_QUOTED`` is before it)."""


def describe_raw_arguments(raw: str) -> str:
    """What is wrong with ``raw`` as tool arguments, e.g. ``not valid JSON at line 1 column 17
    (Expecting ',' delimiter)`` or ``a JSON array, not an object``."""
    return _diagnose(raw)[0]


def _diagnose(raw: str) -> tuple[str, int | None]:
    """The problem and, for broken JSON, the position (in code points) where it is."""
    cut = raw.rfind(trusted.RAW_ARGUMENTS_CUT)
    if cut != -1 and raw.endswith("]"):
        size = raw[cut + len(trusted.RAW_ARGUMENTS_CUT) : -1]
        return f"longer than tether keeps ({size}), so it was cut", None
    if not raw.strip():
        return "empty", None
    try:
        value: object = json.loads(raw)
    except json.JSONDecodeError as error:
        text = f"not valid JSON at line {error.lineno} column {error.colno} ({error.msg})"
        return text, error.pos
    except RecursionError:
        return "nested too deeply to be read", None
    except ValueError as error:  # an integer with more digits than Python converts
        return f"not valid JSON ({error})", None
    if isinstance(value, dict):
        return "a JSON object tether cannot keep (nested too deeply, or NaN or Infinity)", None
    kinds: dict[type, str] = {
        list: "a JSON array",
        str: "a JSON string",
        bool: "a JSON boolean",
        int: "a JSON number",
        float: "a JSON number",
    }
    return f"{kinds.get(type(value), 'JSON null')}, not an object", None


def _excerpt(raw: str, position: int | None) -> str:
    """The part of ``raw`` the result quotes: all of it when short, else its start, or the
    stretch just before and after the broken spot when that lies further in."""
    if len(raw) <= _QUOTED:
        return f"The arguments received were: {_quoted(raw)}"
    if position is None or position <= _QUOTED - _AFTER:
        return f"The arguments received began: {_quoted(raw[:_QUOTED] + '…')}"
    start = position - (_QUOTED - _AFTER)
    end = position + _AFTER
    window = "…" + raw[start:end] + ("…" if end < len(raw) else "")
    return f"The arguments received, around that point: {_quoted(window)}"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def invalid_call_result(call: ToolCall) -> ToolResultMessage:
    """The error result answering the invalid ``call`` (``call.raw_arguments`` is set), e.g.
    ``TOOL_ARGUMENTS_INVALID: not valid JSON at line 1 column 17 (Expecting ',' delimiter);
    send the call again with a JSON object. The arguments received were: "{...}"``."""
    raw = call.raw_arguments or ""
    problem, position = _diagnose(raw)
    text = (
        f"TOOL_ARGUMENTS_INVALID: {problem}; send the call again with a JSON object. "
        f"{_excerpt(raw, position)}"
    )
    return trusted.tool_result(call, text, True)
