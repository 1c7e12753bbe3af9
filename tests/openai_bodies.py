"""OpenAI Chat Completions stream bodies (``text/event-stream`` text) written for the tests.

Each body is written from the shapes documented in ``spec/providers.md`` §2 and §9 (vendor
deviations included), not copied from any recording: the recorded vendor streams are replayed
from the shared folder's ``recorded/`` by the tests instead, and never stored in this repository.
Every chunk carries the fields real servers add and the parser must ignore (``obfuscation``,
``system_fingerprint``, ``x_groq``, ``provider``, ``native_finish_reason``...).
"""

from __future__ import annotations

import json
from typing import Any, Final

DONE: Final = "data: [DONE]\n\n"
DONE_UNTERMINATED: Final = "data: [DONE]"
"""``[DONE]`` with no blank line after it: an SSE decoder drops it (an incomplete event)."""


def data(payload: dict[str, Any]) -> str:
    """One ``data:`` event."""
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"


def sse(*parts: dict[str, Any] | str) -> str:
    """A body: dict parts become ``data:`` events, strings are written as they are."""
    return "".join(part if isinstance(part, str) else data(part) for part in parts)


# --- OpenAI, faithful -----------------------------------------------------------------------------

_OPENAI: Final[dict[str, Any]] = {
    "id": "chatcmpl-T3th3rT3xt0001",
    "object": "chat.completion.chunk",
    "created": 1790000000,
    "model": "gpt-4o-mini-2024-07-18",
    "service_tier": "default",
    "system_fingerprint": "fp_0123456789",
}


def openai_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    choices: bool = True,
    base: dict[str, Any] = _OPENAI,
    padding: str = "xYz1",
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` as OpenAI sends it (``usage: null`` until the last)."""
    chunk = dict(base)
    chunk["choices"] = (
        [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
        if choices
        else []
    )
    chunk["usage"] = usage
    chunk["obfuscation"] = padding
    return chunk


def openai_usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


OPENAI_TEXT_WORDS: Final = ("Paris", " is", " the", " capital", " of", " France", ".")

_OPENAI_TEXT_CHUNKS: Final = (
    openai_chunk({"role": "assistant", "content": "", "refusal": None}),
    *(
        openai_chunk({"content": word}, padding="p" * (3 + i))
        for i, word in enumerate(OPENAI_TEXT_WORDS)
    ),
    openai_chunk({}, finish="stop"),
    openai_chunk(usage=openai_usage(21, 7, cached=0), choices=False),
)

OPENAI_TEXT: Final = sse(*_OPENAI_TEXT_CHUNKS, DONE)
"""Role chunk with ``content: ""``, seven words, ``finish_reason: "stop"``, the
``include_usage`` chunk with ``choices: []``, then ``[DONE]`` and its blank line."""

OPENAI_TEXT_DONE_UNTERMINATED: Final = sse(*_OPENAI_TEXT_CHUNKS, DONE_UNTERMINATED)
"""The same with a final ``data: [DONE]`` that has no blank line: the decoder drops it, so
the parser sees end of stream after the finish reason (complete)."""

OPENAI_TEXT_NO_DONE: Final = sse(*_OPENAI_TEXT_CHUNKS)

OPENAI_TEXT_CUT: Final = sse(*_OPENAI_TEXT_CHUNKS[:4])
"""Cut after three words: no finish reason, no ``[DONE]``."""

OPENAI_TOOL_CALL: Final = sse(
    openai_chunk(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_W3athErLondon01",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ],
            "refusal": None,
        }
    ),
    *(
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        for piece in ('{"', "city", '":"', "London", '","', "unit", '":"', "celsius", '"}')
    ),
    openai_chunk({}, finish="tool_calls"),
    openai_chunk(usage=openai_usage(80, 18, cached=64), choices=False),
    DONE,
)
"""§2.3: an id/name chunk with ``arguments: ""``, argument fragments, ``tool_calls``, the usage
chunk (64 of the 80 prompt tokens cached), ``[DONE]``."""

OPENAI_TOOL_CALL_ARGUMENTS: Final = {"city": "London", "unit": "celsius"}


def _tool_start(index: int, call_id: str, name: str) -> dict[str, Any]:
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }


def _tool_arguments(index: int, arguments: str) -> dict[str, Any]:
    return {"index": index, "function": {"arguments": arguments}}


_PARALLEL_BASE: Final = {**_OPENAI, "id": "chatcmpl-T3th3rP4r4ll3l", "model": "gpt-4o-2024-08-06"}


def _parallel_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    # `usage: null` before `choices`: key order is not stable (§2.3).
    chunk = dict(_PARALLEL_BASE)
    chunk["usage"] = None
    chunk["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    chunk["obfuscation"] = "Qq"
    return chunk


OPENAI_PARALLEL: Final = sse(
    _parallel_chunk({"role": "assistant", "content": None}),
    _parallel_chunk({"tool_calls": [_tool_start(0, "call_Aaaa0001", "get_country")]}),
    _parallel_chunk({"tool_calls": [_tool_arguments(0, "{}")]}),
    _parallel_chunk({"tool_calls": [_tool_start(1, "call_Bbbb0002", "get_time")]}),
    _parallel_chunk({"tool_calls": [_tool_arguments(1, '{"zone":')]}),
    _parallel_chunk({"tool_calls": [_tool_arguments(1, '"UTC"}')]}),
    _parallel_chunk({}, finish="tool_calls"),
    openai_chunk(usage=openai_usage(364, 40), choices=False, base=_PARALLEL_BASE),
    DONE,
)
"""§2.3: index 0 complete (``{}``), then index 1 with its own id/name chunk."""

OPENAI_PARALLEL_INTERLEAVED: Final = sse(
    _parallel_chunk({"role": "assistant", "content": None}),
    _parallel_chunk({"tool_calls": [_tool_start(0, "call_Aaaa0001", "get_country")]}),
    _parallel_chunk({"tool_calls": [_tool_start(1, "call_Bbbb0002", "get_time")]}),
    _parallel_chunk({"tool_calls": [_tool_arguments(0, '{"code"')]}),
    _parallel_chunk({"tool_calls": [_tool_arguments(1, '{"zone"')]}),
    _parallel_chunk({"tool_calls": [_tool_arguments(0, ':"FR"}'), _tool_arguments(1, ':"UTC"')]}),
    _parallel_chunk({"tool_calls": [_tool_arguments(1, "}")]}),
    _parallel_chunk({}, finish="tool_calls"),
    openai_chunk(usage=openai_usage(364, 41), choices=False, base=_PARALLEL_BASE),
    DONE,
)
"""Parallel calls whose deltas interleave (UNVERIFIED for OpenAI, so it must work)."""

# --- OpenRouter -> Kimi-k2 ------------------------------------------------------------------------

_KIMI: Final[dict[str, Any]] = {
    "id": "gen-1790000000-K1m1K1m1K1m1K1m1",
    "provider": "Novita",
    "model": "moonshotai/kimi-k2",
    "object": "chat.completion.chunk",
    "created": 1790000000,
}


def _kimi_chunk(
    delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    chunk = dict(_KIMI)
    chunk["choices"] = [
        {
            "index": 0,
            "delta": {"role": "assistant", **delta},
            "finish_reason": finish,
            "native_finish_reason": finish,
            "logprobs": None,
        }
    ]
    chunk["system_fingerprint"] = ""
    if usage is not None:
        chunk["usage"] = usage
    return chunk


_KIMI_USAGE: Final = {
    "prompt_tokens": 57,
    "completion_tokens": 17,
    "total_tokens": 74,
    "cost": 0.00007,
    "is_byok": False,
    "prompt_tokens_details": {"cached_tokens": 0},
    "cost_details": {"upstream_inference_cost": None},
    "completion_tokens_details": {"reasoning_tokens": 0},
}


def _kimi_call(arguments: str) -> dict[str, Any]:
    return {
        "index": 0,
        "id": "0",
        "type": "function",
        "function": {"name": "llm_version", "arguments": arguments},
    }


KIMI_REPEATED_ID_NAME: Final = sse(
    ": OPENROUTER PROCESSING\n\n",
    _kimi_chunk({"content": ""}),
    _kimi_chunk({"content": None, "tool_calls": [_kimi_call("")]}),
    _kimi_chunk({"content": None, "tool_calls": [_kimi_call("{}")]}),
    _kimi_chunk({"content": ""}, usage=_KIMI_USAGE),
    DONE,
)
"""§2.9/§9.3: id ``"0"`` and the name re-sent in every tool delta, arguments ``""`` then
``"{}"``, no ``finish_reason`` ever, usage on a chunk that has choices, ``[DONE]``."""

KIMI_NAME_ONLY_FIRST_DELTA: Final = sse(
    _kimi_chunk({"content": ""}),
    _kimi_chunk(
        {
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": "llm_version:0",
                    "type": "function",
                    "function": {"name": "llm_version"},
                }
            ],
        }
    ),
    _kimi_chunk(
        {
            "content": None,
            "tool_calls": [{"index": 0, "function": {"arguments": "{}"}, "type": "function"}],
        }
    ),
    _kimi_chunk({"content": ""}, finish="tool_calls"),
    _kimi_chunk({"content": ""}, usage=_KIMI_USAGE),
    DONE,
)
"""§9.4: a name-only first delta (no ``arguments`` key), id ``"llm_version:0"``."""

# --- Groq -----------------------------------------------------------------------------------------

_GROQ: Final[dict[str, Any]] = {
    "id": "chatcmpl-6e0c0c4e-0000-4000-8000-000000000001",
    "object": "chat.completion.chunk",
    "created": 1790000000,
    "model": "openai/gpt-oss-120b",
    "system_fingerprint": "fp_abcdef0123",
}


def _groq_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    chunk = dict(_GROQ)
    chunk["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    chunk.update(extra)
    return chunk


GROQ_REASONING: Final = ("I", " should", " look", " it", " up", ".")

_GROQ_USAGE: Final = {
    "queue_time": 0.0049,
    "prompt_tokens": 304,
    "prompt_time": 0.0146,
    "completion_tokens": 49,
    "completion_time": 0.1121,
    "total_tokens": 353,
    "total_time": 0.1267,
    "completion_tokens_details": {"reasoning_tokens": 23},
}

GROQ_WHOLE_TOOL_CALL: Final = sse(
    _groq_chunk({"role": "assistant", "content": ""}, x_groq={"id": "req_01groq", "seed": 12345}),
    *(_groq_chunk({"reasoning": word, "channel": "analysis"}) for word in GROQ_REASONING),
    _groq_chunk(
        {
            "tool_calls": [
                {
                    "id": "fc_0b7e5b5c-1111-4222-8333-944445555666",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"name":"example"}'},
                    "index": 0,
                }
            ]
        }
    ),
    _groq_chunk(
        {}, "tool_calls", x_groq={"id": "req_01groq", "usage": _GROQ_USAGE}, usage=_GROQ_USAGE
    ),
    DONE,
)
"""§9.5: the whole call in one delta with ``index`` after ``function``; usage both at top level
and in ``x_groq`` (the same numbers: never summed)."""

GROQ_ERROR_EVENT: Final = sse(
    _groq_chunk({"role": "assistant", "content": ""}, x_groq={"id": "req_01groq"}),
    *(_groq_chunk({"reasoning": word, "channel": "analysis"}) for word in GROQ_REASONING),
    "event: error\n",
    {
        "error": {
            "message": "Tool call validation failed: parameters for tool lookup did not match "
            "schema",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": '{"name": "lookup", "arguments": {"bad": 1}}',
            "status_code": 400,
        }
    },
)
"""§2.7/§9.6: reasoning, then ``event: error`` and EOF with no ``[DONE]``."""

# --- OpenRouter -----------------------------------------------------------------------------------

_OPENROUTER: Final[dict[str, Any]] = {
    "id": "gen-1790000000-0penR0uter0penR0",
    "provider": "Google",
    "model": "anthropic/claude-sonnet-4.5",
    "object": "chat.completion.chunk",
    "created": 1790000000,
}
KEEPALIVE: Final = ": OPENROUTER PROCESSING\n\n"


def _openrouter_chunk(
    delta: dict[str, Any],
    finish: str | None = None,
    native: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    chunk = dict(_OPENROUTER)
    chunk["choices"] = [
        {
            "index": 0,
            "delta": {"role": "assistant", **delta},
            "finish_reason": finish,
            "native_finish_reason": native,
            "logprobs": None,
        }
    ]
    chunk.update(extra)
    return chunk


def _reasoning(text: str | None) -> dict[str, Any]:
    details = [
        {"type": "reasoning.text", "text": text, "format": "anthropic-claude-v1", "index": 0}
    ]
    return {"content": "", "reasoning": text, "reasoning_details": details if text else []}


_OPENROUTER_USAGE: Final = {
    "prompt_tokens": 1200,
    "completion_tokens": 36,
    "total_tokens": 1236,
    "cost": 0.000669,
    "is_byok": False,
    "prompt_tokens_details": {
        "cached_tokens": 1000,
        "cache_write_tokens": 150,
        "audio_tokens": 0,
        "video_tokens": 0,
    },
    "cost_details": {"upstream_inference_cost": None},
    "completion_tokens_details": {"reasoning_tokens": 13, "image_tokens": 0},
}

OPENROUTER_REASONING_FINISH_TWICE: Final = sse(
    KEEPALIVE,
    KEEPALIVE,
    _openrouter_chunk(_reasoning(None)),
    _openrouter_chunk(_reasoning("Simple")),
    KEEPALIVE,
    _openrouter_chunk(_reasoning(" arithmetic.")),
    _openrouter_chunk({"content": "2 + 2", "reasoning": None, "reasoning_details": []}),
    _openrouter_chunk({"content": " = 4", "reasoning": None, "reasoning_details": []}),
    _openrouter_chunk({"content": ""}, finish="stop", native="stop"),
    KEEPALIVE,
    _openrouter_chunk({"content": ""}, finish="stop", native=None, usage=_OPENROUTER_USAGE),
    DONE,
)
"""§2.9: keep-alive comments, ``role`` on every delta, ``reasoning`` and
``reasoning_details`` with the same text (take one), ``finish_reason`` twice (the second with
usage on a chunk that has choices), cache reads and writes in ``prompt_tokens_details``."""

OPENROUTER_ERROR_IN_CHUNK: Final = sse(
    KEEPALIVE,
    _openrouter_chunk(_reasoning("We need")),
    _openrouter_chunk(_reasoning(" to answer."), finish="length", native="length"),
    KEEPALIVE,
    {
        **_openrouter_chunk({"content": ""}),
        "error": {"code": 400, "message": "Token limit reached"},
        "usage": {"prompt_tokens": 43, "completion_tokens": 10, "total_tokens": 53},
    },
    DONE,
)
"""§2.7: a top-level ``error`` (numeric code) inside a chunk that also has choices and usage,
then ``[DONE]``."""

OPENROUTER_FINISH_ERROR: Final = sse(
    _openrouter_chunk({"content": "Partial"}),
    _openrouter_chunk({"content": ""}, finish="error", native=None),
    DONE,
)
"""``finish_reason: "error"`` (pydantic-ai #2844)."""

# --- DeepSeek -------------------------------------------------------------------------------------

_DEEPSEEK: Final[dict[str, Any]] = {
    "id": "5c4f0d8e-2b8e-4f6e-9f44-0a1b2c3d4e5f",
    "object": "chat.completion.chunk",
    "created": 1790000000,
    "model": "deepseek-reasoner",
    "system_fingerprint": "fp_deepseek_prod",
}


def _deepseek_chunk(
    delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    chunk = dict(_DEEPSEEK)
    chunk["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    chunk["usage"] = usage
    return chunk


DEEPSEEK_THOUGHT: Final = ("Hmm", ",", " a", " greeting", ".")
DEEPSEEK_ANSWER: Final = ("Hello", "!", " How", " can", " I", " help", "?")

DEEPSEEK_REASONING: Final = sse(
    _deepseek_chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
    *(_deepseek_chunk({"content": None, "reasoning_content": part}) for part in DEEPSEEK_THOUGHT),
    *(_deepseek_chunk({"content": part, "reasoning_content": None}) for part in DEEPSEEK_ANSWER),
    _deepseek_chunk(
        {"content": "", "reasoning_content": None},
        finish="stop",
        usage={
            "prompt_tokens": 70,
            "completion_tokens": 212,
            "total_tokens": 282,
            "completion_tokens_details": {"reasoning_tokens": 198},
            "prompt_cache_hit_tokens": 64,
            "prompt_cache_miss_tokens": 6,
        },
    ),
    DONE,
)
"""§2.9: ``reasoning_content`` deltas (the first ``""`` with ``content: null``), usage on the
finish chunk (no separate usage chunk) with ``prompt_cache_hit_tokens`` (64 of 70)."""

# --- Snowflake Cortex -----------------------------------------------------------------------------


def _snowflake_chunk(choices: list[Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "choices": choices,
        "created": 0,
        "id": "",
        "model": "claude-sonnet-4-6",
        "object": "chat.completion.chunk",
        "service_tier": "",
        "system_fingerprint": "",
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def _snowflake_delta(content: str) -> list[Any]:
    delta = {"content": content, "refusal": "", "role": "assistant", "tool_calls": None}
    return [{"delta": delta, "index": 0, "logprobs": {"content": None, "refusal": None}}]


_SNOWFLAKE_CHUNKS: Final = (
    _snowflake_chunk(_snowflake_delta("4")),
    _snowflake_chunk(_snowflake_delta("")),
    _snowflake_chunk(
        [],
        usage={
            "completion_tokens": 5,
            "prompt_tokens": 22,
            "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": 0},
            "total_tokens": 27,
        },
    ),
)

SNOWFLAKE_DONE: Final = sse(*_SNOWFLAKE_CHUNKS, DONE)
"""§2.9: ``id: ""``, ``created: 0``, ``refusal: ""`` and ``tool_calls: null`` on every delta,
no ``finish_reason`` at all, an empty-choices usage chunk, ``[DONE]``."""

SNOWFLAKE_EOF: Final = sse(*_SNOWFLAKE_CHUNKS, DONE_UNTERMINATED)
"""The same whose ``[DONE]`` is dropped by the decoder: end of stream with no finish reason."""

# --- Azure OpenAI ---------------------------------------------------------------------------------

_AZURE: Final[dict[str, Any]] = {
    "id": "chatcmpl-Azur3Azur3Azur3",
    "object": "chat.completion.chunk",
    "created": 1790000000,
    "model": "gpt-4o-2024-11-20",
    "system_fingerprint": "fp_azure",
}

AZURE_FILTERS: Final = sse(
    {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [
            {"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}
        ],
    },
    {
        **_AZURE,
        "choices": [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": ""},
                "finish_reason": None,
                "content_filter_results": {},
            }
        ],
    },
    {
        **_AZURE,
        "choices": [
            {"index": 0, "delta": {"content": "Hi"}, "finish_reason": None, "logprobs": None}
        ],
    },
    {
        **_AZURE,
        "choices": [
            {
                "index": 0,
                "delta": None,
                "finish_reason": None,
                "content_filter_results": {"violence": {"filtered": False, "severity": "safe"}},
                "content_filter_offsets": {"start_offset": 0, "end_offset": 2, "check_offset": 0},
            }
        ],
    },
    {**_AZURE, "choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": None}]},
    {**_AZURE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {**_AZURE, "choices": None, "usage": {"prompt_tokens": 9, "completion_tokens": 2}},
    DONE,
)
"""§9.10 (synthesized from the issue text): a first chunk with ``choices: []``, ``id: ""`` and
``prompt_filter_results``; a chunk whose ``delta`` is ``null``; a usage chunk with
``choices: null`` (vLLM, UNVERIFIED)."""

# --- Mistral: usage on a chunk that has choices ---------------------------------------------------

MISTRAL_USAGE_WITH_CHOICES: Final = sse(
    {
        "id": "cmpl-m1str4l",
        "object": "chat.completion.chunk",
        "created": 1790000000,
        "model": "mistral-small-latest",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
    },
    {
        "id": "cmpl-m1str4l",
        "object": "chat.completion.chunk",
        "created": 1790000000,
        "model": "mistral-small-latest",
        "choices": [{"index": 0, "delta": {"content": "Bonjour"}, "finish_reason": None}],
    },
    {
        "id": "cmpl-m1str4l",
        "object": "chat.completion.chunk",
        "created": 1790000000,
        "model": "mistral-small-latest",
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "total_tokens": 15, "completion_tokens": 3},
    },
    DONE,
)

# --- tool-call edge cases -------------------------------------------------------------------------


def tool_stream(
    *deltas: list[dict[str, Any]],
    finish: str | None = "tool_calls",
    base: dict[str, Any] = _OPENAI,
    done: bool = True,
) -> str:
    """A stream of ``tool_calls`` deltas (one chunk each), a finish chunk and ``[DONE]``."""
    chunks: list[dict[str, Any] | str] = [
        openai_chunk({"tool_calls": calls}, base=base) for calls in deltas
    ]
    chunks.append(openai_chunk({}, finish=finish, base=base))
    if done:
        chunks.append(DONE)
    return sse(*chunks)


def call(
    index: int | None,
    call_id: str | None = None,
    name: str | None = None,
    arguments: str | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``tool_calls`` entry; ``None`` fields are left out (``index=None``: no index)."""
    entry: dict[str, Any] = {}
    if index is not None:
        entry["index"] = index
    if call_id is not None:
        entry["id"] = call_id
        entry["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        entry["function"] = function
    return entry


INVALID_ARGUMENTS: Final = tool_stream(
    [call(0, "call_1", "write", "")], [call(0, arguments='{"path": "a.txt", ')]
)
"""Arguments that never become valid JSON, with ``finish_reason: "tool_calls"``."""

ARRAY_ARGUMENTS: Final = tool_stream([call(0, "call_1", "write", "[1, 2]")])

EMPTY_ARGUMENTS: Final = tool_stream(
    [call(0, "call_A", "list_files", "")], [call(1, "call_B", "now", "")]
)
"""Two parameterless calls whose only arguments are ``""``: both ``{}``."""

TRUNCATED_TOOL_CALL: Final = tool_stream(
    [call(0, "call_ok", "read", '{"path":"a"}')],
    [call(1, "call_cut", "write", '{"path":"b","content":"hel')],
    finish="length",
)
"""``finish_reason: "length"`` in the middle of the second call's arguments."""

ARGUMENTS_BEFORE_ID: Final = tool_stream(
    [call(0, arguments='{"q":')], [call(0, arguments='"x"}')], [call(0, "call_late", "search")]
)
"""Arguments before id and name (explicitly allowed, pi #4854)."""

GHOST_CALL: Final = tool_stream([call(0, arguments="{}")])
"""Arguments only: the call never gets a name."""

WHOLE_DICT_ARGUMENTS: Final = tool_stream([call(0, "call_d", "add", {"a": 1, "b": [2, 3]})])
"""Arguments sent as a JSON object (LiteLLM's Ollama path, litellm PR #37792)."""

NO_INDEX: Final = tool_stream(
    [call(None, "call_n", "ping", "")], [call(None, arguments='{"host":"x"}')]
)
"""One call whose deltas have no ``index`` (openai-agents PR #4918): unambiguous."""

NO_INDEX_AMBIGUOUS: Final = tool_stream(
    [call(None, "call_1", "a", "{}"), call(None, "call_2", "b", "{}")]
)

CHANGED_ID: Final = tool_stream([call(0, "call_1", "a", "")], [call(0, "call_2", "a", "{}")])
CHANGED_NAME: Final = tool_stream([call(0, "call_1", "a", "")], [call(0, "call_1", "b", "{}")])

DUPLICATE_AND_EMPTY_IDS: Final = tool_stream(
    [call(0, "call_0", "a", "{}")],
    [call(1, "call_0", "b", "{}")],
    [call(2, "", "c", "{}")],
    [call(3, "call_reused", "d", "{}")],
)
"""IDs a server reuses (``call_0`` twice in one response), leaves empty, or that the transcript
already used (``call_reused``, when reserved)."""

STOP_WITH_TOOL_CALL: Final = tool_stream([call(0, "call_s", "f", '{"x":1}')], finish="stop")
"""OpenAI says ``stop`` when ``tool_choice`` names a function (vLLM PR #25054)."""

NULL_FINISH_WITH_TOOL_CALL: Final = tool_stream([call(0, "call_s", "f", '{"x":1}')], finish=None)

TOOL_CALLS_WITHOUT_CALLS: Final = sse(
    openai_chunk({"content": "I would call a tool"}), openai_chunk({}, finish="tool_calls"), DONE
)
"""vLLM #53255: ``tool_calls`` with no parsed call."""

UNKNOWN_FINISH: Final = sse(
    openai_chunk({"content": "x"}), openai_chunk({}, finish="eos_token"), DONE
)
CONTENT_FILTER: Final = sse(
    openai_chunk({"content": "I can"}), openai_chunk({}, finish="content_filter"), DONE
)
LENGTH: Final = sse(openai_chunk({"content": "A long"}), openai_chunk({}, finish="length"), DONE)

REFUSAL: Final = sse(
    openai_chunk({"role": "assistant", "content": None, "refusal": ""}),
    openai_chunk({"refusal": "I can't"}),
    openai_chunk({"refusal": " help with that."}),
    openai_chunk({}, finish="stop"),
    DONE,
)
"""OpenAI structured-output refusal: ``delta.refusal`` text, then ``stop``."""

LEGACY_FUNCTION_CALL: Final = sse(
    openai_chunk(
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": ""}}
    ),
    openai_chunk({"function_call": {"arguments": '{"k":'}}),
    openai_chunk({"function_call": {"arguments": "true}"}}),
    openai_chunk({}, finish="function_call"),
    DONE,
)
"""The deprecated ``delta.function_call`` with ``finish_reason: "function_call"``."""

TEXT_THEN_TOOL_THEN_TEXT: Final = sse(
    openai_chunk({"content": "Let me check."}),
    openai_chunk({"tool_calls": [call(0, "call_m", "lookup", '{"q":')]}),
    openai_chunk({"content": " (one moment)"}),
    openai_chunk({"tool_calls": [call(0, arguments='"weather"}')]}),
    openai_chunk({}, finish="tool_calls"),
    DONE,
)
"""Text while a call is still streaming: the call completes at finish, after the text."""

MIDSTREAM_OPENAI_ERROR: Final = sse(
    openai_chunk({"content": "Par"}),
    {
        "error": {
            "message": "The server experienced an error while processing your request.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    },
    DONE,
)
"""§2.7: OpenAI's mid-stream error object (then ``[DONE]``)."""

# --- minimal chunks (the CLI tests' scripted servers) ---------------------------------------------

_MINIMAL: Final[dict[str, Any]] = {
    "id": "chatcmpl-cli",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "gpt-test-2026",
}


def minimal_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with only the fields a client needs: no ``usage``,
    ``logprobs`` or padding."""
    return {**_MINIMAL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def minimal_usage(prompt: int, completion: int) -> dict[str, Any]:
    """The ``include_usage`` chunk (``choices: []``) to go with ``minimal_chunk``."""
    return {
        **_MINIMAL,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def text_chunks(*parts: str, prompt_tokens: int) -> list[dict[str, Any]]:
    """A text answer in minimal chunks: the role chunk (``content: ""``), one chunk per part,
    ``stop``, and usage of ``prompt_tokens`` in and one token per part out."""
    return [
        minimal_chunk({"role": "assistant", "content": ""}),
        *(minimal_chunk({"content": part}) for part in parts),
        minimal_chunk({}, "stop"),
        minimal_usage(prompt_tokens, len(parts)),
    ]


# --- a non-streamed body (llm-katan answers tools with one) ---------------------------------------

KATAN_TOOL_COMPLETION: Final[dict[str, Any]] = {
    "id": "chatcmpl-katan0001",
    "object": "chat.completion",
    "created": 1790000000,
    "model": "test",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_katan_0",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": '{"city": "test_city", "days": 1}',
                        },
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
}

TEXT_COMPLETION: Final[dict[str, Any]] = {
    "id": "chatcmpl-text0001",
    "object": "chat.completion",
    "created": 1790000000,
    "model": "deepseek-reasoner",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hello!",
                "reasoning_content": "Greet back.",
            },
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 4},
    },
}
