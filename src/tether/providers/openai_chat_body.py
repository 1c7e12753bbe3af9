"""A whole OpenAI ``chat.completion`` JSON body (the answer of a server that ignored
``stream: true``) read as the chunks and response a stream would have given.

It is read by the stream parser itself (``openai_chat_stream``), as one chunk whose
``message`` is the delta, so a whole body and a stream follow the same rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tether._base.exact_types import is_dict, type_of
from tether.protocol import ModelChunk, ModelResponse
from tether.providers._openai_chat_values import error_event as _error_event
from tether.providers._wire import field_error as _field_error
from tether.providers.openai_chat_stream import OpenAIChatStreamParser
from tether.providers.openai_compat import OpenAIChatCompat

__all__ = ["parse_chat_completion"]


def parse_chat_completion(
    body: object,
    request_id: str,
    *,
    compat: OpenAIChatCompat,
    reserved_call_ids: Iterable[str] = frozenset(),
) -> tuple[list[ModelChunk], ModelResponse]:
    """A non-streamed ``chat.completion`` body (the answer of a server that ignored
    ``stream: true``, as llm-katan does with tools) as the chunks a stream would have given
    (its text, reasoning and complete tool calls; no progress chunks) and the response.

    The same rules as the stream: the body is one chunk whose ``message`` is the delta (each
    tool call's ``index`` is its position), and it is complete. ``ProviderError`` for an
    ``error`` body (``PROVIDER_ERROR_EVENT``) or a malformed one.
    """
    parser = OpenAIChatStreamParser(request_id, compat=compat, reserved_call_ids=reserved_call_ids)
    if not is_dict(body):
        raise _field_error("A chat.completion body", "a JSON object", body)
    fields_: dict[str, Any] = body
    error = fields_.get("error")
    if error:
        raise _error_event(error)
    choices = fields_.get("choices")
    if type_of(choices) is not list or not choices:
        raise _field_error("A chat.completion body's choices", "a non-empty array", choices)
    choice_list: list[Any] = choices
    synthetic: list[dict[str, Any]] = []
    for choice in choice_list:
        if type_of(choice) is not dict:
            raise _field_error("A choice", "an object", choice)
        choice_fields: dict[str, Any] = choice
        message = choice_fields.get("message")
        delta: object = message
        if message:
            if type_of(message) is not dict:
                raise _field_error("choices[].message", "an object", message)
            message_fields: dict[str, Any] = message
            tool_calls = message_fields.get("tool_calls")
            if tool_calls and type_of(tool_calls) is list:
                calls: list[Any] = tool_calls
                delta = {
                    **message_fields,
                    "tool_calls": [
                        {**call, "index": position} if type_of(call) is dict else call
                        for position, call in enumerate(calls)
                    ],
                }
        synthetic.append(
            {
                "index": choice_fields.get("index"),
                "delta": delta,
                "finish_reason": choice_fields.get("finish_reason"),
            }
        )
    chunk = {
        "id": fields_.get("id"),
        "model": fields_.get("model"),
        "choices": synthetic,
        "usage": fields_.get("usage"),
    }
    chunks = parser.feed(chunk)
    last, response = parser.finish(done=True)
    kept: list[ModelChunk] = [item for item in (*chunks, *last) if item.type != "toolCallDelta"]
    return kept, response
