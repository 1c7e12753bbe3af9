"""OpenTelemetry spans for runs, model requests and tool calls (``Tracing``).

Pass ``tracing=Tracing()`` to ``run_agent_loop`` or ``Agent`` and each run becomes one
``invoke_agent`` span with a ``chat {model}`` span per model request and an
``execute_tool {name}`` span per tool call under it, named and attributed as the OpenTelemetry
GenAI semantic conventions say (``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``,
``gen_ai.usage.output_tokens``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``; a failure's
``error.type`` is tether's stable code). Prompts, answers and tool arguments and results are
recorded only with ``Tracing(record_content=True)``.

OpenTelemetry is an optional dependency (``pip install 'tether[otel]'``): nothing here imports
it until a traced run starts, and a run without ``tracing`` pays nothing for it.
"""

from __future__ import annotations

from tether.tracing._config import Tracing, TracingUnavailableError

__all__ = ["Tracing", "TracingUnavailableError"]
