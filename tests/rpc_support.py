"""Scripted OpenAI-compatible replies for the RPC, example and cross-mode tests."""

from __future__ import annotations

import json
from typing import Any

import cli_support
from openai_bodies import call, minimal_chunk, minimal_usage
from servers.replay import Script, sse_body, sse_response

PROMPT_TOKENS = 7


def text_reply(*parts: str) -> Script:
    """A streamed text answer."""
    return cli_support.text_reply(*parts, prompt_tokens=PROMPT_TOKENS)


def tool_reply(call_id: str, name: str, arguments: dict[str, Any]) -> Script:
    """A streamed answer that calls ``name`` once with ``arguments``."""
    encoded = json.dumps(arguments)
    return sse_response(
        sse_body(
            [
                minimal_chunk({"role": "assistant", "tool_calls": [call(0, call_id, name, "")]}),
                minimal_chunk({"tool_calls": [call(0, arguments=encoded)]}),
                minimal_chunk({}, "tool_calls"),
                minimal_usage(9, 3),
            ]
        )
    )
