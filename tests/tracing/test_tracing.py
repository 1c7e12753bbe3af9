"""OpenTelemetry spans of a run (``tether.tracing``), checked with the SDK's in-memory
exporter and, once, exported over OTLP/HTTP to a receiver on 127.0.0.1 that decodes the
protobuf."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from openai_bodies import minimal_chunk, minimal_usage
from servers.replay import ReplayServer, json_response, sse_body, sse_response
from tether import (
    AbortController,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.models.scripted import ScriptedModel
from tether.providers.openai_chat import OpenAIChatModel
from tether.tracing import Tracing

SECRET = "sk-test-TRACING-0123456789abcdef"
PROMPT = "What is 20 + 22? (a private question)"
ANSWER = "The sum is 42, privately."


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


@pytest.fixture
def exporter() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield spans, provider
    provider.shutdown()


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def _attributes(span: ReadableSpan) -> Mapping[str, Any]:
    return dict(span.attributes or {})


def _everything(spans: tuple[ReadableSpan, ...]) -> str:
    return json.dumps([{k: str(v) for k, v in _attributes(span).items()} for span in spans])


def _two_turns() -> ScriptedModel:
    return ScriptedModel([tool_call_reply(("add", {"left": 20, "right": 22})), text_reply(ANSWER)])


async def test_a_run_is_one_span_with_a_span_per_request_and_tool_call(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans_out, provider = exporter
    run = run_agent_loop(
        messages=[UserMessage(content=PROMPT)],
        model=_two_turns(),
        tools=ToolRegistry([add]),
        max_steps=4,
        system="You are a private calculator.",
        tracing=Tracing(tracer_provider=provider, agent_name="calculator"),
    )
    result = await run.result
    assert result.status == "completed"

    spans = spans_out.get_finished_spans()
    named = _by_name(spans)
    assert sorted(named) == ["chat", "execute_tool add", "invoke_agent calculator"]
    [root] = named["invoke_agent calculator"]
    chats = named["chat"]
    [tool_span] = named["execute_tool add"]
    assert root.parent is None
    assert len(chats) == 2
    root_context = root.get_span_context()
    assert root_context is not None
    for child in (*chats, tool_span):
        child_context = child.get_span_context()
        assert child.parent is not None
        assert child_context is not None
        assert child.parent.span_id == root_context.span_id
        assert child_context.trace_id == root_context.trace_id
    assert _attributes(root)["gen_ai.operation.name"] == "invoke_agent"
    assert _attributes(root)["gen_ai.agent.name"] == "calculator"
    assert _attributes(root)["gen_ai.provider.name"] == "tether.ScriptedModel"
    assert _attributes(root)["tether.run.status"] == "completed"
    assert [_attributes(chat)["gen_ai.response.finish_reasons"] for chat in chats] == [
        ("tool_call",),
        ("stop",),
    ]
    assert all(_attributes(chat)["gen_ai.operation.name"] == "chat" for chat in chats)
    total = sum(int(_attributes(chat)["gen_ai.usage.output_tokens"]) for chat in chats)
    assert total == _attributes(root)["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert _attributes(tool_span)["gen_ai.tool.name"] == "add"
    [call] = [
        block
        for message in result.messages
        if message.role == "assistant"
        for block in message.content
        if block.type == "toolCall"
    ]
    assert _attributes(tool_span)["gen_ai.tool.call.id"] == call.id
    assert tool_span.status.status_code is StatusCode.UNSET
    # the spans nest in time: the tool ran between the two requests
    assert chats[0].end_time is not None
    assert tool_span.start_time is not None
    assert chats[0].end_time <= tool_span.start_time
    # no content without opting in
    text = _everything(spans)
    for private in ("private", '"left"', "42"):
        assert private not in text


async def test_content_is_recorded_only_when_asked(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans_out, provider = exporter
    run = run_agent_loop(
        messages=[UserMessage(content=PROMPT)],
        model=_two_turns(),
        tools=ToolRegistry([add]),
        max_steps=4,
        system="You are a private calculator.",
        tracing=Tracing(tracer_provider=provider, record_content=True),
    )
    await run.result

    named = _by_name(spans_out.get_finished_spans())
    [root] = named["invoke_agent"]
    assert "private calculator" in str(_attributes(root)["gen_ai.system_instructions"])
    first, second = named["chat"]
    assert PROMPT in str(_attributes(first)["gen_ai.input.messages"])
    assert ANSWER in str(_attributes(second)["gen_ai.output.messages"])
    [tool_span] = named["execute_tool add"]
    assert json.loads(str(_attributes(tool_span)["gen_ai.tool.call.arguments"])) == {
        "left": 20,
        "right": 22,
    }
    assert _attributes(tool_span)["gen_ai.tool.call.result"] == "42"


async def test_a_failing_tool_and_a_failing_request_carry_their_codes(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans_out, provider = exporter
    async with ReplayServer() as server:
        server.respond(
            sse_response(
                sse_body(
                    [
                        minimal_chunk(
                            {
                                "role": "assistant",
                                "tool_calls": [
                                    {
                                        "index": 0,
                                        "id": "call_1",
                                        "type": "function",
                                        "function": {"name": "nope", "arguments": "{}"},
                                    }
                                ],
                            }
                        ),
                        minimal_chunk({}, "tool_calls"),
                        minimal_usage(9, 3),
                    ]
                )
            )
        )
        server.respond(json_response(401, {"error": {"message": "bad key"}}))
        async with OpenAIChatModel(
            "gpt-test",
            base_url=server.url + "/v1",
            api_key=SECRET,
        ) as model:
            run = run_agent_loop(
                messages=[UserMessage(content=PROMPT)],
                model=model,
                tools=ToolRegistry([add]),
                max_steps=4,
                tracing=Tracing(tracer_provider=provider),
            )
            result = await run.result

    assert result.status == "failed"
    named = _by_name(spans_out.get_finished_spans())
    [root] = named["invoke_agent"]
    assert _attributes(root)["gen_ai.provider.name"] == "openai"
    assert _attributes(root)["gen_ai.request.model"] == "gpt-test"
    assert _attributes(root)["error.type"] == result.error.code
    assert root.status.status_code is StatusCode.ERROR
    first, second = named["chat gpt-test"]
    assert _attributes(first)["gen_ai.usage.input_tokens"] == 9
    assert _attributes(second)["error.type"] == "PROVIDER_AUTH_FAILED"
    assert second.status.status_code is StatusCode.ERROR
    [tool_span] = named["execute_tool nope"]
    assert _attributes(tool_span)["error.type"] == "TOOL_NOT_FOUND"
    assert SECRET not in _everything(spans_out.get_finished_spans())


async def test_a_cancelled_run_ends_every_span(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans_out, provider = exporter
    started = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait until cancelled."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    controller = AbortController()
    run = run_agent_loop(
        messages=[UserMessage(content=PROMPT)],
        model=ScriptedModel([tool_call_reply(("wait", {}))]),
        tools=ToolRegistry([wait]),
        max_steps=4,
        signal=controller.signal,
        tracing=Tracing(tracer_provider=provider),
    )
    await started.wait()
    controller.abort("the user pressed Esc")
    result = await run.result

    assert result.status == "cancelled"
    named = _by_name(spans_out.get_finished_spans())
    [root] = named["invoke_agent"]
    assert _attributes(root)["error.type"] == "cancelled"
    assert len(named["chat"]) == 1
    [tool_span] = named["execute_tool wait"]
    assert tool_span.end_time is not None


def test_without_tracing_nothing_of_opentelemetry_is_imported() -> None:
    code = (
        "import asyncio, sys\n"
        "from tether import ToolRegistry, UserMessage, run_agent_loop, text_reply\n"
        "from tether.models.scripted import ScriptedModel\n"
        "async def main():\n"
        "    run = run_agent_loop(messages=[UserMessage(content='hi')],\n"
        "        model=ScriptedModel([text_reply('hello')]), tools=ToolRegistry([]), max_steps=1)\n"
        "    print((await run.result).status)\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines() == ["completed", "[]"]


def test_tracing_without_opentelemetry_is_a_clear_error() -> None:
    code = (
        "import asyncio, sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "from tether import ToolRegistry, UserMessage, run_agent_loop, text_reply\n"
        "from tether.models.scripted import ScriptedModel\n"
        "from tether.tracing import Tracing\n"
        "async def main():\n"
        "    try:\n"
        "        run_agent_loop(messages=[UserMessage(content='hi')], tracing=Tracing(),\n"
        "            model=ScriptedModel([text_reply('hello')]), tools=ToolRegistry([]),\n"
        "            max_steps=1)\n"
        "    except Exception as error:\n"
        "        print(error.code, error)\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.startswith("TRACING_UNAVAILABLE Tracing needs OpenTelemetry: pip install")


def test_bad_options_are_type_errors() -> None:
    with pytest.raises(TypeError, match="record_content"):
        Tracing(record_content="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tracer_provider"):
        Tracing(tracer_provider=object())
    with pytest.raises(TypeError, match="agent_name"):
        Tracing(agent_name=" ")


# -- OTLP over HTTP, to a receiver on loopback -------------------------------------------------


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, bytes]]]
    arrived: ClassVar[threading.Event]

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        type(self).bodies.append((self.path, self.rfile.read(length)))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
        type(self).arrived.set()

    def log_message(self, format: str, *args: Any) -> None:
        return


async def test_spans_export_over_otlp_http_to_a_loopback_receiver() -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    class Receiver(_Receiver):
        bodies: ClassVar[list[tuple[str, bytes]]] = []
        arrived: ClassVar[threading.Event] = threading.Event()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    provider = TracerProvider()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        run = run_agent_loop(
            messages=[UserMessage(content=PROMPT)],
            model=_two_turns(),
            tools=ToolRegistry([add]),
            max_steps=4,
            tracing=Tracing(tracer_provider=provider),
        )
        assert (await run.result).status == "completed"
        assert await asyncio.to_thread(Receiver.arrived.wait, 30)
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)

    names: list[str] = []
    for path, body in Receiver.bodies:
        assert path == "/v1/traces"
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                assert scope.scope.name == "tether"
                names.extend(span.name for span in scope.spans)
    assert sorted(names) == ["chat", "chat", "execute_tool add", "invoke_agent"]


async def test_an_agent_traces_each_logical_run_across_its_turns(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    from tether.agent import Agent

    spans_out, provider = exporter
    agent = Agent(
        model=ScriptedModel(
            [
                tool_call_reply(("add", {"left": 20, "right": 22})),
                text_reply(ANSWER),
                text_reply("Again."),
            ]
        ),
        tools=ToolRegistry([add]),
        tracing=Tracing(tracer_provider=provider, agent_name="helper"),
    )
    first = await agent.run(PROMPT)
    second = await agent.run("And again?")
    assert first.status == second.status == "completed"

    spans = spans_out.get_finished_spans()
    roots = [span for span in spans if span.name == "invoke_agent helper"]
    assert len(roots) == 2
    for root in roots:
        assert root.parent is None
    first_root, second_root = roots
    first_context = first_root.get_span_context()
    assert first_context is not None
    under_first = [
        span.name
        for span in spans
        if span.parent is not None and span.parent.span_id == first_context.span_id
    ]
    assert sorted(under_first) == ["chat", "chat", "execute_tool add"]
    assert _attributes(second_root)["tether.run.status"] == "completed"


def test_an_agent_refuses_a_tracing_that_is_not_one() -> None:
    from tether.agent import Agent

    with pytest.raises(TypeError, match="tracing"):
        Agent(model=_two_turns(), tracing=object())  # type: ignore[arg-type]


async def test_a_runtime_passes_its_tracing_to_the_agent_it_builds(
    exporter: tuple[InMemorySpanExporter, TracerProvider], tmp_path: Path
) -> None:
    from tether.agent.runtime import RuntimeAgentOptions, create_runtime

    spans_out, provider = exporter
    runtime = await create_runtime(
        {
            "cwd": tmp_path,
            "session": {"path": "session.jsonl", "mode": "create"},
            "model": ScriptedModel([text_reply(ANSWER)]),
            "agent_options": RuntimeAgentOptions(tracing=Tracing(tracer_provider=provider)),
        }
    )
    try:
        assert (await runtime.agent.run(PROMPT)).status == "completed"
    finally:
        await runtime.dispose()
    names = sorted(span.name for span in spans_out.get_finished_spans())
    assert names == ["chat", "invoke_agent"]
