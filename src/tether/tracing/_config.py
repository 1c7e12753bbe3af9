"""``Tracing``: how a run is traced, checked once when the run starts."""

from __future__ import annotations

from typing import Any, Final, Literal

from tether._base.dataclass import dataclass
from tether._base.tether_error import TetherError

__all__ = ["INSTRUMENTATION_NAME", "Tracing", "TracingUnavailableError"]

INSTRUMENTATION_NAME: Final = "tether"
"""The instrumentation scope every tether span is created under."""


class TracingUnavailableError(TetherError):
    """``TRACING_UNAVAILABLE``: a run asked for tracing but ``opentelemetry-api`` is not
    installed (``pip install 'tether[otel]'``)."""

    def __init__(self) -> None:
        super().__init__(
            "TRACING_UNAVAILABLE",
            "Tracing needs OpenTelemetry: pip install 'tether[otel]' (opentelemetry-api and "
            "opentelemetry-sdk)",
        )

    @property
    def code(self) -> Literal["TRACING_UNAVAILABLE"]:
        """``TRACING_UNAVAILABLE``."""
        return "TRACING_UNAVAILABLE"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tracing:
    """Trace runs with OpenTelemetry.

    ``tracer_provider`` is an ``opentelemetry.trace.TracerProvider`` (e.g. the SDK's, with
    your exporter); ``None`` uses the global one (``trace.set_tracer_provider``), so a process
    configured by ``opentelemetry-instrument`` or its own setup needs nothing more.
    ``record_content`` adds what the conventions call sensitive: the system prompt, the
    messages sent and received (``gen_ai.input.messages``, ``gen_ai.output.messages``) and
    each tool call's arguments and result. Off by default: spans then carry only names,
    IDs, counts, finish reasons and error codes. ``agent_name`` names the run's span
    (``invoke_agent {agent_name}``, ``gen_ai.agent.name``).
    """

    tracer_provider: Any = None
    record_content: bool = False
    agent_name: str | None = None

    def __post_init__(self) -> None:
        if type(self.record_content) is not bool:
            raise TypeError("Tracing.record_content must be a bool")
        if self.agent_name is not None and (
            type(self.agent_name) is not str or not self.agent_name.strip()
        ):
            raise TypeError("Tracing.agent_name must be a non-empty string or None")
        if self.tracer_provider is not None and not callable(
            getattr(self.tracer_provider, "get_tracer", None)
        ):
            raise TypeError("Tracing.tracer_provider must be a TracerProvider (get_tracer) or None")
