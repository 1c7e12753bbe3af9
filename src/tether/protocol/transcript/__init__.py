"""Checkpoint 03: the normalized message IR over the protocol's messages.

Snapshotting constructors turn untrusted arguments into protocol messages:
``user_message``, ``assistant_message`` and ``tool_result_message`` take keyword arguments
(assistant blocks may be protocol blocks or JSON-shaped mappings with camelCase keys), copy
and freeze everything, and raise ``TypeError`` with the workshop's messages.
``parse_message`` does the same for a whole JSON-shaped message.

``validate_transcript`` checks a transcript without ever raising. It returns
``TranscriptDiagnostic(code, message_index, message)`` values: shape problems in traversal
order, then linkage problems (orphan results, results before their call, name mismatches),
then calls that have no later result. Ambiguous linkage (a malformed or duplicated call) is
not reported twice. Every caller field is read once; an exception while inspecting one entry
becomes that entry's diagnostic and the other entries are still checked.

The modules, one job each: ``_reading`` (reading an untrusted field once, ``MISSING``, and
the one decoder's configuration for the fields not worded here), ``_blocks`` (snapshotting
blocks, tool-call arguments and images), ``_constructors`` (the constructors above),
``_diagnostics`` (the diagnostic, its codes and the tool-call linkage ``TranscriptLinks``
the loop extends incrementally) and ``_validate`` (``validate_transcript``).
"""

from __future__ import annotations

from tether.protocol.transcript._constructors import (
    assistant_message,
    parse_message,
    text_from_assistant,
    tool_result_message,
    user_message,
)
from tether.protocol.transcript._diagnostics import TranscriptDiagnostic, TranscriptDiagnosticCode
from tether.protocol.transcript._validate import validate_transcript

__all__ = [
    "TranscriptDiagnostic",
    "TranscriptDiagnosticCode",
    "assistant_message",
    "parse_message",
    "text_from_assistant",
    "tool_result_message",
    "user_message",
    "validate_transcript",
]
