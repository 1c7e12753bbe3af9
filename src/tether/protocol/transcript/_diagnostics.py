"""What transcript validation reports: ``TranscriptDiagnostic``, its ten codes, and
``TranscriptLinks``, the tool-call linkage gathered while walking a transcript.

The links are kept apart from the shape checks (``_validate``) so a caller that appends
known-good messages (the agent loop) can extend them incrementally instead of revalidating
the whole transcript.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from tether._base.dataclass import dataclass

__all__ = [
    "TranscriptDiagnostic",
    "TranscriptDiagnosticCode",
    "TranscriptLinks",
    "diagnostic",
]

TranscriptDiagnosticCode: TypeAlias = Literal[
    "INVALID_TRANSCRIPT",
    "INVALID_MESSAGE",
    "DUPLICATE_TOOL_CALL_ID",
    "DUPLICATE_TOOL_RESULT",
    "ORPHAN_TOOL_RESULT",
    "TOOL_RESULT_BEFORE_CALL",
    "MISSING_TOOL_RESULT",
    "TOOL_NAME_MISMATCH",
    "EMPTY_TOOL_NAME",
    "INVALID_TOOL_ARGUMENTS",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptDiagnostic:
    """One problem in a transcript. ``message_index`` is ``-1`` for the whole transcript."""

    code: TranscriptDiagnosticCode
    message_index: int
    message: str


def diagnostic(code: TranscriptDiagnosticCode, index: int, message: str) -> TranscriptDiagnostic:
    """A diagnostic of entry ``index`` (``-1``: the whole transcript)."""
    return TranscriptDiagnostic(code=code, message_index=index, message=message)


class TranscriptLinks:
    """Tool-call and tool-result linkage gathered while walking a transcript.

    Kept apart from the shape checks so a caller that appends known-good messages (the agent
    loop) can extend the links incrementally instead of revalidating the whole transcript.
    """

    __slots__ = ("calls", "malformed_calls", "malformed_results", "results")

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[int, str]]] = {}
        self.results: dict[str, list[tuple[int, str]]] = {}
        self.malformed_calls: set[str] = set()
        self.malformed_results: set[str] = set()

    def add_call(
        self, call_id: str, name: str, index: int, found: list[TranscriptDiagnostic]
    ) -> None:
        """Record a valid call; an ID seen before adds its duplicate diagnostic to ``found``."""
        _link(self.calls, call_id, name, index, found, "DUPLICATE_TOOL_CALL_ID", _NOT_UNIQUE)

    def add_result(
        self, call_id: str, name: str, index: int, found: list[TranscriptDiagnostic]
    ) -> None:
        """Record a valid result; a second result adds its duplicate diagnostic to ``found``."""
        _link(self.results, call_id, name, index, found, "DUPLICATE_TOOL_RESULT", _TWO_RESULTS)

    def diagnostics(self) -> list[TranscriptDiagnostic]:
        """Linkage problems: orphan, early and misnamed results, then calls with no result."""
        found: list[TranscriptDiagnostic] = []
        for call_id, results in self.results.items():
            calls = self.calls.get(call_id)
            if not calls:
                if call_id not in self.malformed_calls:
                    found.extend(
                        TranscriptDiagnostic(
                            code="ORPHAN_TOOL_RESULT",
                            message_index=index,
                            message=f'Tool result references unknown call ID "{call_id}"',
                        )
                        for index, _ in results
                    )
                continue
            if len(calls) != 1 or call_id in self.malformed_calls:
                continue
            call_index, call_name = calls[0]
            for index, name in results:
                if index <= call_index:
                    found.append(
                        TranscriptDiagnostic(
                            code="TOOL_RESULT_BEFORE_CALL",
                            message_index=index,
                            message=f'Tool result for "{call_id}" appears before its call',
                        )
                    )
                elif name != call_name:
                    found.append(
                        TranscriptDiagnostic(
                            code="TOOL_NAME_MISMATCH",
                            message_index=index,
                            message=(
                                f'Tool result name "{name}" does not match call name "{call_name}"'
                            ),
                        )
                    )
        for call_id, calls in self.calls.items():
            if len(calls) != 1 or call_id in self.malformed_calls:
                continue
            if call_id in self.malformed_results:
                continue
            call_index = calls[0][0]
            results = self.results.get(call_id)
            if results is None or max(index for index, _ in results) <= call_index:
                found.append(
                    TranscriptDiagnostic(
                        code="MISSING_TOOL_RESULT",
                        message_index=call_index,
                        message=f'Tool call "{call_id}" has no later result',
                    )
                )
        return found


_NOT_UNIQUE: Final = 'Tool call ID "{}" is not unique'
_TWO_RESULTS: Final = 'Tool call "{}" has more than one result'


def _link(
    table: dict[str, list[tuple[int, str]]],
    call_id: str,
    name: str,
    index: int,
    found: list[TranscriptDiagnostic],
    code: TranscriptDiagnosticCode,
    message: str,
) -> None:
    """Record ``(index, name)`` under ``call_id`` in ``table``; when the ID was there before,
    add the diagnostic ``code`` with ``message`` (its ``{}`` the ID) to ``found``."""
    seen = table.get(call_id)
    if seen is None:
        table[call_id] = [(index, name)]
        return
    seen.append((index, name))
    found.append(diagnostic(code, index, message.format(call_id)))
