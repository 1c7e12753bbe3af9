"""``OpenAIChatCompat``: how one OpenAI-compatible server deviates from OpenAI (re-exported by
``tether.providers.openai_wire``). Plain data in a module of its own, so that the catalog's
presets (``tether.providers.openai_chat_api``) load without the wire format's code.
"""

from __future__ import annotations

from typing import Literal

from tether._base.dataclass import dataclass
from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty

__all__ = ["OpenAIChatCompat"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAIChatCompat:
    """How one OpenAI-compatible server deviates from OpenAI.

    Explicit switches, never heuristics: the defaults are OpenAI's own behaviour, and each
    field says which servers need it changed. ``tether.providers.catalog`` has presets.
    """

    system_role: Literal["system", "developer"] = "system"
    """The role of the system-prompt message. OpenAI's reasoning models prefer
    ``"developer"``; almost every compatible server knows only ``"system"``."""

    send_stream_options: bool = True
    """Send ``stream_options: {"include_usage": true}`` so the stream ends with usage. Mistral
    answers 422, older Azure API versions and some gateways 400: turn it off for them (most
    of them send usage anyway)."""

    include_obfuscation: bool | None = None
    """``stream_options.include_obfuscation``: OpenAI pads every chunk with a random
    ``obfuscation`` string (a side-channel mitigation). ``False`` asks it to stop, saving
    bandwidth; ``None`` sends nothing (servers other than OpenAI do not know the field). Only
    sent together with ``stream_options``."""

    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    """Which field carries ``max_output_tokens``. OpenAI deprecated ``max_tokens`` (o-series
    models reject it); many compatible servers know only ``max_tokens``."""

    send_parallel_tool_calls: bool | None = None
    """``parallel_tool_calls`` to send with tools (``None``: leave the server's default).
    Only sent when the request has tools: OpenAI rejects it otherwise."""

    reasoning_fields: tuple[str, ...] = ("reasoning_content", "reasoning")
    """Delta fields that carry reasoning text, in order of preference. The first one present
    (non-null) in a delta is taken and the others are ignored, never both: OpenRouter sends
    the same text in ``reasoning`` and ``reasoning_details``, vLLM moved from
    ``reasoning_content`` to ``reasoning``; DeepSeek, Z.ai and llama.cpp use
    ``reasoning_content``, Groq and OpenRouter ``reasoning``. ``()`` ignores reasoning."""

    finish_reason_optional: bool = False
    """The server never sends ``finish_reason`` (Snowflake Cortex, some OpenRouter routes):
    end of stream without one is then a complete response, not a lost connection. Off by
    default: a stream cut before its ``finish_reason`` is ``PROVIDER_STREAM_INTERRUPTED``."""

    requires_done: bool = False
    """Only ``data: [DONE]`` completes the stream: end of stream without it is
    ``PROVIDER_STREAM_INTERRUPTED`` even after a ``finish_reason``. Off by default, because
    an SSE decoder drops a final ``data: [DONE]`` that has no blank line after it, and Groq
    ends some streams without one. Wins over ``finish_reason_optional``."""

    invalid_arguments: Literal["raw", "empty"] = "raw"
    """How an invalid tool call (``ToolCall.raw_arguments``: the model sent argument text that
    is not a JSON object) is sent back in the transcript. ``"raw"``: its ``arguments`` string
    is the text the model sent, so the model sees its own mistake (OpenAI accepts any string
    there). ``"empty"``: ``"{}"``; the loop's ``TOOL_ARGUMENTS_INVALID`` result still quotes
    the text. Servers that re-parse the arguments of earlier calls to render their chat
    template need ``"empty"``, or every later request is rejected: llama.cpp (``Failed to
    parse tool call arguments as JSON``), vLLM and SGLang before their 2026 fixes, Ollama;
    the presets for local servers and OpenRouter (whose routes reach them) set it."""

    send_prompt_cache_key: bool = True
    """Send ``prompt_cache_key`` (the model's per-session key, when it has one): OpenAI
    routes requests with the same key to the same cache. Off for the other servers: some
    reject fields they do not know (Mistral answers 422)."""

    usage_cumulative_every_chunk: bool = False
    """Documentation only: the server repeats cumulative usage on every chunk (vLLM's
    ``continuous_usage_stats``, some Fireworks models). Nothing changes: usage is always the
    last non-null value, never a sum."""

    def __post_init__(self) -> None:
        _check_choice("system_role", self.system_role, ("system", "developer"))
        _check_choice(
            "max_tokens_field", self.max_tokens_field, ("max_completion_tokens", "max_tokens")
        )
        _check_choice("invalid_arguments", self.invalid_arguments, ("raw", "empty"))
        for name in (
            "send_stream_options",
            "finish_reason_optional",
            "requires_done",
            "send_prompt_cache_key",
            "usage_cumulative_every_chunk",
        ):
            if type_of(getattr(self, name)) is not bool:
                raise TypeError(f"OpenAIChatCompat.{name} must be a bool")
        for name in ("include_obfuscation", "send_parallel_tool_calls"):
            value = getattr(self, name)
            if value is not None and type_of(value) is not bool:
                raise TypeError(f"OpenAIChatCompat.{name} must be a bool or None")
        reasoning: object = self.reasoning_fields
        if type_of(reasoning) is list:
            reasoning = tuple(self.reasoning_fields)
            object.__setattr__(self, "reasoning_fields", reasoning)
        if type_of(reasoning) is not tuple or not all(
            is_non_empty(name) for name in self.reasoning_fields
        ):
            raise TypeError("OpenAIChatCompat.reasoning_fields must be a tuple of field names")


def _check_choice(name: str, value: object, options: tuple[str, ...]) -> None:
    if type_of(value) is not str or value not in options:
        expected = " or ".join(repr(option) for option in options)
        raise ValueError(f"OpenAIChatCompat.{name} must be {expected}")
