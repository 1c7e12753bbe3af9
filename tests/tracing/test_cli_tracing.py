"""``tether run`` traces its run when the standard OTLP endpoint variable is set (or the config
file says ``[tracing] enabled = true``): the spans arrive at a loopback OTLP/HTTP receiver,
decoded from protobuf, without the prompt unless ``record_content`` is on; a config table
that is wrong is a config error."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cli_support import child_env, run_tether, text_reply
from servers.replay import ReplayServer

pytestmark = [pytest.mark.slow]

PROMPT = "What is the private number?"


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []
    arrived: ClassVar[threading.Event] = threading.Event()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        type(self).bodies.append(self.rfile.read(length))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
        type(self).arrived.set()

    def log_message(self, format: str, *args: Any) -> None:
        return


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _spans(bodies: list[bytes]) -> list[Any]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    found: list[Any] = []
    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                found.extend(scope.spans)
    return found


@pytest.mark.parametrize("record", [False, True])
async def test_tether_run_exports_its_spans_over_otlp(tmp_path: Path, record: bool) -> None:
    class Receiver(_Receiver):
        bodies: ClassVar[list[bytes]] = []
        arrived: ClassVar[threading.Event] = threading.Event()

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces"
        env = child_env(tmp_path, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint)
        if record:
            _write(Path(env["TETHER_CONFIG"]), "[tracing]\nrecord_content = true\n")
        async with ReplayServer() as server:
            server.respond(text_reply("Forty-two.", prompt_tokens=9))
            done = await run_tether(
                "run", "--model", "openai/gpt-test", "--base-url", server.url, "-p", PROMPT,
                env=env, cwd=tmp_path,
            )  # fmt: skip
        assert done.returncode == 0, done.err
        assert await asyncio.to_thread(Receiver.arrived.wait, 30)
    finally:
        receiver.shutdown()
        receiver.server_close()
        thread.join(timeout=30)

    spans = _spans(Receiver.bodies)
    assert sorted(span.name for span in spans) == ["chat gpt-test", "invoke_agent"]
    everything = b"".join(Receiver.bodies)
    assert (PROMPT.encode() in everything) is record
    assert env["OPENAI_API_KEY"].encode() not in everything


async def test_a_bad_tracing_table_is_a_config_error(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    _write(Path(env["TETHER_CONFIG"]), '[tracing]\nenabled = "yes"\n')
    done = await run_tether("run", "--model", "openai/gpt-test", "-p", "hi", env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert "CLI_CONFIG_INVALID" in done.err
    assert "'tracing.enabled' must be true or false" in done.err
