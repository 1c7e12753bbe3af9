"""What the command line traces: OpenTelemetry spans of every run, exported over OTLP/HTTP.

Tracing is on when the config file says ``[tracing] enabled = true`` or when the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` variable is set; the
exporter then reads the other ``OTEL_EXPORTER_OTLP_*`` variables (headers, timeout,
protocol) itself, and ``OTEL_SERVICE_NAME`` names the service (``tether`` otherwise). The
spans are batched and flushed when the process exits (the SDK's own exit hook). Without it,
nothing of OpenTelemetry is imported. Contents (prompts, answers, tool arguments) are sent
only with ``[tracing] record_content = true``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from tether.cli.config import CliConfig, CliError

if TYPE_CHECKING:
    from tether.tracing import Tracing

__all__ = ["OTLP_ENDPOINT_VARIABLES", "cli_tracing"]

OTLP_ENDPOINT_VARIABLES: Final = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)
"""The standard variables whose value turns tracing on."""


def cli_tracing(config: CliConfig, environ: Mapping[str, str]) -> Tracing | None:
    """The ``Tracing`` of a mode's coding session, or ``None`` when tracing is off.
    ``CliError`` ``CLI_TRACING_UNAVAILABLE`` when it is on and OpenTelemetry's SDK or OTLP
    exporter is not installed."""
    settings = config.tracing
    if not settings.enabled and not any(environ.get(name) for name in OTLP_ENDPOINT_VARIABLES):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise CliError(
            "CLI_TRACING_UNAVAILABLE",
            "tracing is on (config [tracing] or OTEL_EXPORTER_OTLP_*) but OpenTelemetry is not "
            "installed: pip install 'tether[otel]' opentelemetry-exporter-otlp-proto-http",
        ) from None
    from tether.tracing import Tracing

    service = environ.get("OTEL_SERVICE_NAME") or "tether"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return Tracing(tracer_provider=provider, record_content=settings.record_content)
