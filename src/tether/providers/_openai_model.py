"""What the two OpenAI models (``OpenAIChatModel``, ``OpenAIResponsesModel``) share besides
``HttpStreamModel``: their headers (the key as ``Authorization: Bearer``), the levels an
OpenAI model takes and the ``reasoning_effort`` a request sends.

Both take ``thinking`` (a ``ThinkingLevel``) or ``reasoning_effort`` (the API's own string,
sent as given), never both; a level is sent as the effort ``openai_chat_effort`` names for
it on the model, clamped to ``openai_levels``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tether.providers._streaming import bearer_headers
from tether.providers.thinking import (
    LevelledThinking,
    ThinkingLevel,
    openai_chat_effort,
    openai_levels,
)

__all__ = ["OpenAIModel", "check_max_output_tokens"]


class OpenAIModel(LevelledThinking):
    """The headers and reasoning options of an OpenAI model (see the module docstring),
    mixed into an ``HttpStreamModel``. A model declares ``_extra_headers`` and
    ``_reasoning_effort`` in its ``__slots__`` and calls ``_choose_reasoning`` in its
    constructor; its request builder sends ``_effort()``."""

    __slots__ = ()
    _reasoning_effort: str | None
    _api_key: str | None
    _extra_headers: dict[str, str]

    def _headers(self) -> Mapping[str, str]:
        return bearer_headers(self._api_key, self._extra_headers)

    def _thinking_levels(self) -> tuple[ThinkingLevel, ...]:
        return openai_levels(self._model)

    def _choose_reasoning(self, thinking: ThinkingLevel | None, effort: str | None) -> None:
        """Keep ``effort`` and choose ``thinking``; ``TypeError`` when both are given."""
        if thinking is not None and effort is not None:
            raise TypeError("pass thinking (a level) or reasoning_effort, not both")
        self._reasoning_effort = effort
        self._thinking = None
        self._choose_thinking(thinking)

    def _effort(self) -> str | None:
        """The ``reasoning_effort`` to send: the constructor's, or the level's."""
        if self._thinking is None:
            return self._reasoning_effort
        return openai_chat_effort(self._thinking.level, model=self._model)


def check_max_output_tokens(max_output_tokens: object) -> None:
    """The constructors' ``max_output_tokens`` checked (``TypeError`` otherwise): a positive
    int, or ``None`` (the API's own limit)."""
    if max_output_tokens is not None and (
        type(max_output_tokens) is not int or max_output_tokens < 1
    ):
        raise TypeError("max_output_tokens must be a positive int or None")
