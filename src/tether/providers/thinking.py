"""One thinking level for every API: ``off | minimal | low | medium | high``.

A ``ThinkingLevel`` says how much a model should reason before it answers; each wire API
spells it its own way, and this module is the one place that knows how (pure functions, no
I/O):

* **Anthropic Messages** (``anthropic_thinking``): ``thinking: {"type": "enabled",
  "budget_tokens": N}`` with N = 1024 / 2048 / 8192 / 16384 for minimal / low / medium /
  high, nothing for ``off``. The API counts thinking against ``max_tokens`` and requires the
  budget below it, so ``max_tokens`` becomes ``max(max_output_tokens, N + 4096)``: the
  answer keeps at least 4096 tokens. Claude 3 models other than 3.7 have no extended
  thinking (``off`` only).
* **OpenAI Chat Completions** (``openai_chat_effort``): ``reasoning_effort`` is the level's
  name; ``off`` sends nothing (the server's default), or ``"none"`` on the gpt-5.N models
  that have it.
* **OpenAI Responses** (``openai_responses_reasoning``): ``reasoning: {"effort": ...,
  "summary": "auto"}`` with the same efforts, nothing for ``off`` (``{"effort": "none"}``
  where the model has it).
* **Gemini** (``gemini_thinking_config``): the ``generationConfig.thinkingConfig`` object.
  Gemini 2.5 takes a ``thinkingBudget`` (512 / 2048 / 8192 and the model's maximum for
  minimal / low / medium / high; ``0`` is off, which only Flash and Flash-Lite allow);
  Gemini 3 takes a ``thinkingLevel`` (``low``/``high`` on Pro; Flash also ``minimal`` and
  ``medium``) and cannot turn thinking off. ``includeThoughts: true`` whenever it thinks.

Not every model takes every level: ``*_levels(model)`` says which ones a model accepts
(known model families by name; a name tether does not know is assumed to take them all), and
``clamp_level`` picks the nearest one it accepts (a tie goes to the one that thinks more),
with a ``notice`` to show the person once. The per-API options of the models
(``AnthropicModel(thinking_budget=...)``, ``OpenAIChatModel(reasoning_effort=...)``) remain
the precise form.
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Final,
    Literal,
    Protocol,
    TypeAlias,
    TypeGuard,
    runtime_checkable,
)

from tether._base.dataclass import dataclass
from tether._base.strings import LazyPattern

if TYPE_CHECKING:
    from typing import Self

__all__ = [
    "ANTHROPIC_BUDGETS",
    "THINKING_LEVELS",
    "AnthropicThinking",
    "LevelledThinking",
    "ThinkingChoice",
    "ThinkingLevel",
    "ThinkingModel",
    "anthropic_levels",
    "anthropic_thinking",
    "choose_level",
    "clamp_level",
    "gemini_levels",
    "gemini_thinking_config",
    "is_thinking_level",
    "next_level",
    "openai_chat_effort",
    "openai_levels",
    "openai_responses_reasoning",
    "parse_thinking_level",
]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high"]
"""How much a model reasons before it answers, from none to the most (see the module
docstring for what each API sends)."""

THINKING_LEVELS: Final[tuple[ThinkingLevel, ...]] = ("off", "minimal", "low", "medium", "high")
"""Every level, from least to most thinking (the order ``next_level`` cycles through)."""

ANTHROPIC_BUDGETS: Final[dict[ThinkingLevel, int]] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
}
"""Anthropic's ``budget_tokens`` per level (1024 is the API's minimum)."""
ANTHROPIC_ANSWER_TOKENS: Final = 4096
"""The output tokens left for the answer beyond the thinking budget, at least."""


def is_thinking_level(value: object) -> TypeGuard[ThinkingLevel]:
    """Whether ``value`` is one of ``THINKING_LEVELS`` (a ``str``, exactly)."""
    return type(value) is str and value in THINKING_LEVELS


def next_level(level: ThinkingLevel | None) -> ThinkingLevel:
    """The level after ``level`` in ``THINKING_LEVELS``, ``high`` wrapping to ``off``
    (``None``, no level chosen yet: ``off``)."""
    if level is None:
        return "off"
    return THINKING_LEVELS[(THINKING_LEVELS.index(level) + 1) % len(THINKING_LEVELS)]


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingChoice:
    """A ``requested`` level as ``model`` takes it: ``level`` is what is sent (the nearest
    level the model accepts); ``notice`` says so when the two differ (``None`` otherwise)."""

    requested: ThinkingLevel
    level: ThinkingLevel
    model: str

    @property
    def clamped(self) -> bool:
        """Whether the model takes another level than the one requested."""
        return self.level != self.requested

    @property
    def notice(self) -> str | None:
        """One line for the person, e.g. ``"thinking: gpt-5 has no 'off' level; using
        'minimal'"``; ``None`` when nothing was clamped."""
        if not self.clamped:
            return None
        return f"thinking: {self.model} has no {self.requested!r} level; using {self.level!r}"


@runtime_checkable
class ThinkingModel(Protocol):
    """A model that takes a ``ThinkingLevel`` (``AnthropicModel``, ``OpenAIChatModel``):
    the level asked for (``thinking``), how it takes it (``thinking_choice``), and a copy at
    another level on the same connection (``with_thinking``)."""

    @property
    def thinking(self) -> ThinkingLevel | None: ...

    @property
    def thinking_choice(self) -> ThinkingChoice | None: ...

    def with_thinking(self, level: ThinkingLevel | None) -> Self: ...


class LevelledThinking:
    """What a model that takes a ``ThinkingLevel`` has (``ThinkingModel``), written once: the
    level asked for, how the model takes it, and a copy at another level on the same
    connection. A model sets ``_thinking`` with ``_choose_thinking(level)`` in its constructor
    and says which levels it takes in ``_thinking_levels``; it reads ``_thinking.level`` when
    it builds a request. (Its class declares ``_thinking`` in its ``__slots__``.)"""

    __slots__ = ()
    _thinking: ThinkingChoice | None
    _model: str

    def _thinking_levels(self) -> tuple[ThinkingLevel, ...]:
        raise NotImplementedError

    def _choose_thinking(self, level: ThinkingLevel | None) -> None:
        self._thinking = choose_level(level, self._thinking_levels(), model=self._model)

    @property
    def thinking(self) -> ThinkingLevel | None:
        """The thinking level asked for (``None``: none; the API's own option may be set)."""
        return None if self._thinking is None else self._thinking.requested

    @property
    def thinking_choice(self) -> ThinkingChoice | None:
        """How this model takes the level: the level sent and, when it had to be clamped,
        a ``notice`` to show (``None`` without a level)."""
        return self._thinking

    def with_thinking(self, level: ThinkingLevel | None) -> Self:
        """A copy of this model at another thinking level (``None``: as constructed). The
        copy shares this model's HTTP client: closing either closes it."""
        import copy

        clone = copy.copy(self)
        clone._choose_thinking(level)
        return clone


def clamp_level(
    requested: ThinkingLevel, supported: tuple[ThinkingLevel, ...], *, model: str
) -> ThinkingChoice:
    """``requested`` as a model accepting ``supported`` (non-empty) takes it: the level
    itself when supported, else the nearest one in ``THINKING_LEVELS`` order, a tie going
    to the one that thinks more."""
    if requested not in THINKING_LEVELS:
        raise ValueError(f"thinking level must be one of {', '.join(THINKING_LEVELS)}")
    if not supported or any(level not in THINKING_LEVELS for level in supported):
        raise ValueError("supported must name at least one thinking level")
    if requested in supported:
        return ThinkingChoice(requested=requested, level=requested, model=model)
    at = THINKING_LEVELS.index(requested)

    def distance(level: ThinkingLevel) -> tuple[int, int]:
        index = THINKING_LEVELS.index(level)
        return abs(index - at), -index

    best = min(supported, key=distance)
    return ThinkingChoice(requested=requested, level=best, model=model)


def choose_level(
    level: ThinkingLevel | None, supported: tuple[ThinkingLevel, ...], *, model: str
) -> ThinkingChoice | None:
    """A model constructor's ``thinking=`` argument checked and clamped: ``None`` for
    ``None``, else ``clamp_level``'s choice; ``TypeError`` (naming ``thinking``) for anything
    but a ``ThinkingLevel``."""
    if level is None:
        return None
    if not is_thinking_level(level):
        raise TypeError(f"thinking must be one of {', '.join(map(repr, THINKING_LEVELS))}")
    return clamp_level(level, supported, model=model)


def _name(model: str) -> str:
    """The model's own name: lowercase, without a ``vendor/`` routing prefix."""
    return model.rsplit("/", 1)[-1].lower()


# --- Anthropic ----------------------------------------------------------------------------------

_CLAUDE_3_NO_THINKING: Final = LazyPattern(r"claude-3-(?!7)|claude-3\.5|claude-instant|claude-2")


def anthropic_levels(model: str) -> tuple[ThinkingLevel, ...]:
    """The levels ``model`` takes on Anthropic Messages: ``off`` only for the Claude 3
    models without extended thinking (all but 3.7), else every level."""
    if _CLAUDE_3_NO_THINKING.match(_name(model)):
        return ("off",)
    return THINKING_LEVELS


@dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicThinking:
    """What one level sends on Anthropic Messages: ``budget_tokens`` (``None``: no
    ``thinking`` field) and ``max_tokens``."""

    budget_tokens: int | None
    max_tokens: int

    def fields(self) -> dict[str, object]:
        """The request fields: ``max_tokens`` and, when it thinks, ``thinking``."""
        body: dict[str, object] = {"max_tokens": self.max_tokens}
        if self.budget_tokens is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.budget_tokens}
        return body


def anthropic_thinking(
    level: ThinkingLevel, *, model: str, max_output_tokens: int
) -> AnthropicThinking:
    """Anthropic's fields for ``level`` on ``model`` (clamped to ``anthropic_levels``) with
    ``max_output_tokens`` asked for: see the module docstring."""
    level = clamp_level(level, anthropic_levels(model), model=model).level
    if level == "off":
        return AnthropicThinking(budget_tokens=None, max_tokens=max_output_tokens)
    budget = ANTHROPIC_BUDGETS[level]
    return AnthropicThinking(
        budget_tokens=budget, max_tokens=max(max_output_tokens, budget + ANTHROPIC_ANSWER_TOKENS)
    )


# --- OpenAI (Chat Completions and Responses) -----------------------------------------------------

_OPENAI_NO_REASONING: Final = LazyPattern(r"gpt-4|gpt-3\.5|chatgpt-|gpt-5(\.\d+)?-chat")
_OPENAI_NONE_EFFORT: Final = LazyPattern(r"gpt-5\.\d")
_OPENAI_MINIMAL: Final = LazyPattern(r"gpt-5(?![.\d])")
_OPENAI_O_SERIES: Final = LazyPattern(r"o\d")


def openai_levels(model: str) -> tuple[ThinkingLevel, ...]:
    """The levels an OpenAI ``model`` takes (Chat Completions and Responses alike):

    * ``gpt-4*``, ``gpt-3.5*``, ``chatgpt-*`` and the ``gpt-5*-chat`` models do not reason:
      ``off`` only;
    * ``gpt-5.N`` (5.1 and later): ``off`` (sent as ``"none"``), low, medium, high;
    * ``gpt-5`` (and its mini/nano/codex): minimal, low, medium, high (it always reasons);
    * ``o1``, ``o3``, ``o4-mini``...: low, medium, high;
    * any other name (another server's model): off (nothing sent), low, medium, high
      (``minimal`` is gpt-5's own).
    """
    name = _name(model)
    if _OPENAI_NO_REASONING.match(name):
        return ("off",)
    if _OPENAI_NONE_EFFORT.match(name):
        return ("off", "low", "medium", "high")
    if _OPENAI_MINIMAL.match(name):
        return ("minimal", "low", "medium", "high")
    if _OPENAI_O_SERIES.match(name):
        return ("low", "medium", "high")
    return ("off", "low", "medium", "high")


def openai_chat_effort(level: ThinkingLevel, *, model: str) -> str | None:
    """Chat Completions' ``reasoning_effort`` for ``level`` on ``model`` (clamped to
    ``openai_levels``): the level's name, ``None`` (not sent) for ``off``, or ``"none"``
    for ``off`` on the gpt-5.N models that have it."""
    level = clamp_level(level, openai_levels(model), model=model).level
    if level == "off":
        return "none" if _OPENAI_NONE_EFFORT.match(_name(model)) else None
    return level


def openai_responses_reasoning(
    level: ThinkingLevel,
    *,
    model: str,
    summary: Literal["auto", "concise", "detailed"] | None = "auto",
) -> dict[str, object] | None:
    """The Responses API's ``reasoning`` object for ``level`` on ``model`` (clamped to
    ``openai_levels``): ``{"effort": level, "summary": summary}`` (no ``summary`` when ``None``);
    ``None`` (no field) for ``off``, or ``{"effort": "none"}`` where the model has it."""
    effort = openai_chat_effort(level, model=model)
    if effort is None:
        return None
    if effort == "none" or summary is None:
        return {"effort": effort}
    return {"effort": effort, "summary": summary}


# --- Gemini -------------------------------------------------------------------------------------

_GEMINI_3: Final = LazyPattern(r"gemini-(?:[3-9]|\d\d)")
_GEMINI_OLD: Final = LazyPattern(r"gemini-(?:1\.|2\.0|pro|ultra)|gemma-")
GEMINI_BUDGETS: Final[dict[ThinkingLevel, int]] = {"minimal": 512, "low": 2048, "medium": 8192}
"""Gemini 2.5's ``thinkingBudget`` per level below ``high`` (``high``: the model's maximum,
32768 on Pro, 24576 on Flash and Flash-Lite)."""


def gemini_levels(model: str) -> tuple[ThinkingLevel, ...]:
    """The levels a Gemini ``model`` takes: Gemini 3 Pro low and high, Gemini 3 Flash
    minimal, low, medium and high (no ``off`` on Gemini 3); Gemini 2.5 Pro every level but
    ``off``; Gemini 2.5 Flash and Flash-Lite (and names tether does not know) every level;
    Gemini 1.x and 2.0 and Gemma ``off`` only (no thinking)."""
    name = _name(model)
    if _GEMINI_3.match(name):
        return ("minimal", "low", "medium", "high") if "flash" in name else ("low", "high")
    if _GEMINI_OLD.match(name):
        return ("off",)
    if name.startswith("gemini-2.5-pro"):
        return ("minimal", "low", "medium", "high")
    return THINKING_LEVELS


def gemini_thinking_config(level: ThinkingLevel, *, model: str) -> dict[str, object] | None:
    """``generationConfig.thinkingConfig`` for ``level`` on ``model`` (clamped to
    ``gemini_levels``):
    Gemini 3 ``{"thinkingLevel": level, "includeThoughts": true}``; Gemini 2.5 (and unknown
    names) ``{"thinkingBudget": N, "includeThoughts": true}``, ``{"thinkingBudget": 0}`` for
    ``off``; ``None`` (no field) for the models without thinking."""
    level = clamp_level(level, gemini_levels(model), model=model).level
    name = _name(model)
    if _GEMINI_3.match(name):
        return {"thinkingLevel": level, "includeThoughts": True}
    if _GEMINI_OLD.match(name):
        return None
    if level == "off":
        return {"thinkingBudget": 0}
    if level == "high":
        budget = 32768 if name.startswith("gemini-2.5-pro") else 24576
    else:
        budget = GEMINI_BUDGETS[level]
    return {"thinkingBudget": budget, "includeThoughts": True}


def parse_thinking_level(value: object) -> ThinkingLevel:
    """``value`` as a ``ThinkingLevel``; ``ValueError`` naming the levels otherwise."""
    if not is_thinking_level(value):
        raise ValueError(f"thinking level must be one of: {', '.join(THINKING_LEVELS)}")
    return value
