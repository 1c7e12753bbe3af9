"""google-genai as an oracle: what its ``GenerateContentResponse`` objects say a Gemini stream
holds, assembled by the rules tether follows (the SDK has no stream accumulator of its own),
and the comparison with tether's ``ModelResponse``."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

from tether.protocol import ModelResponse, ModelUsage, TextBlock, ToolCall


def described(content: Iterable[Any]) -> list[tuple[str, object, str | None]]:
    out: list[tuple[str, object, str | None]] = []
    for block in content:
        if isinstance(block, ToolCall):
            arguments = json.loads(json.dumps(dict(block.arguments.items())))
            out.append(("tool", (block.id, block.name, arguments), block.signature))
        else:
            kind = "text" if isinstance(block, TextBlock) else "thinking"
            out.append((kind, block.text, block.signature))
    return out


def sdk_described(responses: list[Any]) -> dict[str, Any]:
    """What the SDK's objects say, assembled by the same rules (text joined per kind; a signed
    part starts a block): the SDK has no stream accumulator of its own."""
    blocks: list[list[Any]] = []
    calls = 0
    finish = None
    response_id = next(r.response_id for r in responses if r.response_id)
    for response in responses:
        candidates: list[Any] = response.candidates or []
        for candidate in candidates:
            if candidate.finish_reason is not None:
                finish = candidate.finish_reason.value
            parts: list[Any] = (candidate.content and candidate.content.parts) or []
            for part in parts:
                raw = part.thought_signature
                signature = None if raw is None else base64.b64encode(raw).decode()
                if part.function_call is not None:
                    call = part.function_call
                    call_id = call.id or f"{response_id}-call-{calls}"
                    calls += 1
                    blocks.append(["tool", (call_id, call.name, call.args), signature])
                    continue
                kind = "thinking" if part.thought and part.text else "text"
                if signature is None and not part.text:
                    continue
                if signature is None and blocks and blocks[-1][0] == kind:
                    blocks[-1][1] += part.text
                else:
                    blocks.append([kind, part.text or "", signature])
    meta = responses[-1].usage_metadata
    cached = meta.cached_content_token_count or 0
    return {
        "blocks": [tuple(block) for block in blocks],
        "finish": finish,
        "calls": calls,
        "usage": ModelUsage(
            input_tokens=(meta.prompt_token_count or 0) - cached,
            output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
            cache_read_tokens=cached,
        ),
        "id": response_id,
        "model": responses[-1].model_version,
    }


def assert_same_as_sdk(response: ModelResponse, sdk: dict[str, Any]) -> None:
    """tether's response says what the SDK's objects say. The SDK holds a signature as bytes:
    tether keeps the received base64 text, which decodes to those very bytes."""
    ours = described(response.message.content)
    assert [block[:2] for block in ours] == [block[:2] for block in sdk["blocks"]]
    for mine, theirs in zip(ours, sdk["blocks"], strict=True):
        assert (mine[2] is None) == (theirs[2] is None)
        if mine[2] is not None:
            assert base64.b64decode(mine[2]) == base64.b64decode(theirs[2])
    stop = "toolCall" if sdk["calls"] else {"STOP": "stop", "MAX_TOKENS": "length"}[sdk["finish"]]
    assert response.stop_reason == stop
    assert response.usage == sdk["usage"]
    assert (response.id, response.model) == (sdk["id"], sdk["model"])
