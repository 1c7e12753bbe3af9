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


def describe_raw_arguments(raw: str) -> str:
    """What is wrong with ``raw`` as tool arguments, e.g. ``not valid JSON at line 1 column 17
    (Expecting ',' delimiter)`` or ``a JSON array, not an object``."""
    cut = raw.rfind(trusted.RAW_ARGUMENTS_CUT)
    if cut != -1 and raw.endswith("]"):
        return f"longer than tether keeps ({raw[cut + len(trusted.RAW_ARGUMENTS_CUT) : -1]})"
    if not raw.strip():
        return "empty"
    try:
        value: object = json.loads(raw)
    except json.JSONDecodeError as error:
        return f"not valid JSON at line {error.lineno} column {error.colno} ({error.msg})"
    except RecursionError:
        return "nested too deeply to be read"
    except ValueError as error:  # an integer with more digits than Python converts
        return f"not valid JSON ({error})"
    if isinstance(value, dict):
        return "a JSON object tether cannot keep (nested too deeply, or NaN or Infinity)"
    kinds: dict[type, str] = {
        list: "a JSON array",
        str: "a JSON string",
        bool: "a JSON boolean",
        int: "a JSON number",
        float: "a JSON number",
    }
    return f"{kinds.get(type(value), 'JSON null')}, not an object"


def invalid_call_result(call: ToolCall) -> ToolResultMessage:
    """The error result answering the invalid ``call`` (``call.raw_arguments`` is set)::

    TOOL_ARGUMENTS_INVALID: not valid JSON at line 1 column 17 (Expecting ',' delimiter);
    send the call again with a JSON object. The arguments received began: "{...}"
    """
    raw = call.raw_arguments or ""
    quoted = raw if len(raw) <= _QUOTED else raw[:_QUOTED] + "…"
    text = (
        f"TOOL_ARGUMENTS_INVALID: {describe_raw_arguments(raw)}; send the call again with a "
        f"JSON object. The arguments received began: {json.dumps(quoted, ensure_ascii=False)}"
    )
    return trusted.tool_result(call, text, True)
