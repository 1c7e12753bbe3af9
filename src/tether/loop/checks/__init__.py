"""The loop's boundary checks: what a model sends and what a run starts from.

A model is untrusted. Each streamed chunk is snapshotted (protocol values as they are,
JSON-shaped mappings parsed once), correlated with the active request and counted against
the run's ``RunLimits``; the final response is checked the same way and must agree with what
was streamed (text and thinking coalesced, tool calls one for one; ``toolCallDelta`` chunks
are progress and are not matched). The starting transcript is snapshotted and its tool-call
linkage checked in one pass. Every failure here is a ``ModelProtocolError`` or an
``InvalidTranscript`` with the message the run reports.

The package's modules, one job each: ``_failures`` (the typed failures), ``_transcript`` (the
starting transcript), ``_bounds`` (the limits on messages and tool arguments), ``_chunks``
(streamed chunks), ``_response`` (the final response) and ``_agreement`` (the final message
against the stream).
"""

from __future__ import annotations

from tether.loop.checks._agreement import AGREEMENT_KINDS, check_agreement

# joined is not in __all__ (not re-exported by tether); the loop imports it here
from tether.loop.checks._agreement import joined as joined
from tether.loop.checks._bounds import (
    check_argument_bounds,
    check_assistant_bounds,
    check_raw_argument_bounds,
)
from tether.loop.checks._chunks import snapshot_chunk
from tether.loop.checks._failures import (
    InvalidTranscript,
    ModelOutputTruncated,
    ModelProtocolError,
    ModelRefused,
    ModelStreamFailure,
    RunFailure,
    SignalAccessError,
    ToolPhaseFailure,
    limit_hint,
)
from tether.loop.checks._response import snapshot_response
from tether.loop.checks._transcript import snapshot_transcript
from tether.protocol.results import RunFailureCode

__all__ = [
    "AGREEMENT_KINDS",
    "InvalidTranscript",
    "ModelOutputTruncated",
    "ModelProtocolError",
    "ModelRefused",
    "ModelStreamFailure",
    "RunFailure",
    "RunFailureCode",
    "SignalAccessError",
    "ToolPhaseFailure",
    "check_agreement",
    "check_argument_bounds",
    "check_assistant_bounds",
    "check_raw_argument_bounds",
    "limit_hint",
    "snapshot_chunk",
    "snapshot_response",
    "snapshot_transcript",
]
