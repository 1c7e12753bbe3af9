"""The model catalog: what tether knows about the models of its provider presets, and what a
model's usage costs.

* ``ModelPrices``: US dollars per million tokens of uncached input, output, cache reads and
  cache writes; any of them ``None`` (not known).
* ``ModelInfo``: one model: its ``context_window`` and ``max_output_tokens`` (tokens), its
  ``prices`` and its capabilities (``images``: it reads image input; ``thinking``: it can
  think, or reason, before it answers).
* ``MODEL_CATALOG``: the known models by spec (``"anthropic/claude-sonnet-4-5"``);
  ``model_info(spec)`` looks one up (an Anthropic model ID with a date, ``-latest`` or
  ``-0`` at the end, such as ``claude-sonnet-4-5-20250929``, finds the entry without it).
* ``Cost`` and ``cost_of(usage, prices)``: what a ``ModelUsage`` costs. Each count is priced
  at its own price (``input_tokens`` are uncached input; cache reads at the cache-read price,
  cache writes at the cache-write price). A count that is not zero and has no price makes
  the cost unknown: ``cost_of`` returns ``None``, never a cost that leaves tokens out;
  ``None`` prices (a model tether knows nothing about) are unknown even for no tokens.

Prices are the vendors' published list prices (standard tier; Anthropic's cache writes at the
5-minute TTL, 1.25x input, reads 0.1x; OpenAI's cached input at its discount, writes free),
each provider's with the date they were taken. They change: ``[models."PROVIDER/MODEL"]`` of
the config file overrides any of them (``tether.cli.config``).

Pure data: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from tether._base.exact_types import type_of

if TYPE_CHECKING:
    from tether.protocol import ModelUsage

__all__ = ["MODEL_CATALOG", "Cost", "ModelInfo", "ModelPrices", "cost_of", "model_info"]

_PER: Final = 1_000_000
_SUFFIX: Final = re.compile(r"-(?:\d{8}|latest|0)$")


def _price(value: object, name: str) -> None:
    if value is None:
        return
    if not isinstance(value, int | float) or type_of(value) is bool or not 0 <= value < math.inf:
        raise ValueError(f"ModelPrices.{name} must be a finite number >= 0, or None")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrices:
    """US dollars per million tokens: ``input`` (uncached input), ``output``, ``cache_read``
    and ``cache_write``; ``None``: not known. ``ValueError`` for a negative or non-finite
    price."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            _price(getattr(self, name), name)

    def over(self, base: ModelPrices | None) -> ModelPrices:
        """These prices, each one that is ``None`` taken from ``base`` (the catalog's, under a
        config file's)."""
        if base is None:
            return self
        return ModelPrices(
            input=base.input if self.input is None else self.input,
            output=base.output if self.output is None else self.output,
            cache_read=base.cache_read if self.cache_read is None else self.cache_read,
            cache_write=base.cache_write if self.cache_write is None else self.cache_write,
        )

    @property
    def known(self) -> bool:
        """Whether any price is known."""
        return any(
            price is not None
            for price in (self.input, self.output, self.cache_read, self.cache_write)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    """One model of the catalog: ``context_window`` and ``max_output_tokens`` (tokens;
    ``None``: not known), its ``prices``, whether it reads ``images`` and whether it can
    think (reason) before answering (``thinking``)."""

    context_window: int | None = None
    max_output_tokens: int | None = None
    prices: ModelPrices = field(default_factory=ModelPrices)
    images: bool = False
    thinking: bool = False

    def __post_init__(self) -> None:
        for name in ("context_window", "max_output_tokens"):
            value = getattr(self, name)
            if value is not None and (type_of(value) is not int or value < 1):
                raise ValueError(f"ModelInfo.{name} must be a positive int or None")
        if type_of(self.prices) is not ModelPrices:
            raise TypeError("ModelInfo.prices must be ModelPrices")
        if type_of(self.images) is not bool or type_of(self.thinking) is not bool:
            raise TypeError("ModelInfo.images and ModelInfo.thinking must be bools")


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """What some usage cost, in US dollars, by kind of token: ``input`` (uncached),
    ``output``, ``cache_read`` and ``cache_write``. Costs add up (``a + b``)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    @property
    def total(self) -> float:
        """The whole cost."""
        return self.input + self.output + self.cache_read + self.cache_write

    def __add__(self, other: Cost) -> Cost:
        if type(other) is not Cost:
            return NotImplemented
        return Cost(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
        )

    def to_json(self) -> dict[str, float]:
        """``{"inputUsd", "outputUsd", "cacheReadUsd", "cacheWriteUsd", "totalUsd"}``."""
        return {
            "inputUsd": self.input,
            "outputUsd": self.output,
            "cacheReadUsd": self.cache_read,
            "cacheWriteUsd": self.cache_write,
            "totalUsd": self.total,
        }


def _part(tokens: int, price: float | None) -> float | None:
    if tokens == 0:
        return 0.0
    return None if price is None else tokens * price / _PER


def cost_of(usage: ModelUsage, prices: ModelPrices | None) -> Cost | None:
    """What ``usage`` costs at ``prices`` (see the module docstring); ``None`` when a count
    that is not zero has no price, or ``prices`` is ``None``."""
    if prices is None or not prices.known:
        return None
    parts = (
        _part(usage.input_tokens, prices.input),
        _part(usage.output_tokens, prices.output),
        _part(usage.cache_read_tokens, prices.cache_read),
        _part(usage.cache_write_tokens, prices.cache_write),
    )
    if None in parts:
        return None
    spent = [part or 0.0 for part in parts]
    return Cost(input=spent[0], output=spent[1], cache_read=spent[2], cache_write=spent[3])


def _reads_images(
    input_price: float,
    output_price: float,
    cache_read: float,
    cache_write: float,
    *,
    context: int,
    max_output: int,
    thinking: bool,
) -> ModelInfo:
    """A model that reads images, with its limits and its four prices (per million tokens);
    the vendors' entries below say how they price the cache."""
    return ModelInfo(
        context_window=context,
        max_output_tokens=max_output,
        prices=ModelPrices(
            input=input_price, output=output_price, cache_read=cache_read, cache_write=cache_write
        ),
        images=True,
        thinking=thinking,
    )


def _anthropic(
    input_price: float, output_price: float, *, context: int, max_output: int
) -> ModelInfo:
    """An Anthropic model: cache writes (5-minute TTL) at 1.25x input, reads at 0.1x (the
    multipliers of Anthropic's pricing page)."""
    cache_read, cache_write = round(input_price * 0.1, 6), round(input_price * 1.25, 6)
    return _reads_images(
        input_price,
        output_price,
        cache_read,
        cache_write,
        context=context,
        max_output=max_output,
        thinking=True,
    )


def _openai(
    input_price: float,
    cached_price: float,
    output_price: float,
    *,
    context: int,
    max_output: int,
    reasoning: bool = False,
) -> ModelInfo:
    """An OpenAI model: cached input at its own price, cache writes at the input price
    (OpenAI charges nothing for writing the cache)."""
    return _reads_images(
        input_price,
        output_price,
        cached_price,
        input_price,
        context=context,
        max_output=max_output,
        thinking=reasoning,
    )


_CATALOG: Final[dict[str, ModelInfo]] = {
    # Anthropic, anthropic.com/pricing and the models overview, taken 2025-11-25.
    "anthropic/claude-opus-4-5": _anthropic(5, 25, context=200_000, max_output=64_000),
    "anthropic/claude-opus-4-1": _anthropic(15, 75, context=200_000, max_output=32_000),
    "anthropic/claude-opus-4": _anthropic(15, 75, context=200_000, max_output=32_000),
    "anthropic/claude-sonnet-4-5": _anthropic(3, 15, context=200_000, max_output=64_000),
    "anthropic/claude-sonnet-4": _anthropic(3, 15, context=200_000, max_output=64_000),
    "anthropic/claude-haiku-4-5": _anthropic(1, 5, context=200_000, max_output=64_000),
    # OpenAI, openai.com/api/pricing (standard tier), taken 2025-11-25.
    "openai/gpt-5": _openai(1.25, 0.125, 10, context=400_000, max_output=128_000, reasoning=True),
    "openai/gpt-5-mini": _openai(
        0.25, 0.025, 2, context=400_000, max_output=128_000, reasoning=True
    ),
    "openai/gpt-5-nano": _openai(
        0.05, 0.005, 0.4, context=400_000, max_output=128_000, reasoning=True
    ),
    "openai/gpt-4.1": _openai(2, 0.5, 8, context=1_047_576, max_output=32_768),
    "openai/gpt-4.1-mini": _openai(0.4, 0.1, 1.6, context=1_047_576, max_output=32_768),
    "openai/gpt-4.1-nano": _openai(0.1, 0.025, 0.4, context=1_047_576, max_output=32_768),
    "openai/gpt-4o": _openai(2.5, 1.25, 10, context=128_000, max_output=16_384),
    "openai/gpt-4o-mini": _openai(0.15, 0.075, 0.6, context=128_000, max_output=16_384),
    "openai/o3": _openai(2, 0.5, 8, context=200_000, max_output=100_000, reasoning=True),
    "openai/o4-mini": _openai(1.1, 0.275, 4.4, context=200_000, max_output=100_000, reasoning=True),
    # DeepSeek (V3.2-Exp behind both names), api-docs.deepseek.com pricing, taken 2025-10-01:
    # a cache hit is the cache-read price; misses are input (DeepSeek charges no cache writes).
    "deepseek/deepseek-chat": ModelInfo(
        context_window=128_000,
        max_output_tokens=8_192,
        prices=ModelPrices(input=0.28, output=0.42, cache_read=0.028, cache_write=0.28),
    ),
    "deepseek/deepseek-reasoner": ModelInfo(
        context_window=128_000,
        max_output_tokens=65_536,
        prices=ModelPrices(input=0.28, output=0.42, cache_read=0.028, cache_write=0.28),
    ),
    # Groq, groq.com/pricing, taken 2025-10-01 (cache prices not known).
    "groq/llama-3.3-70b-versatile": ModelInfo(
        context_window=131_072, prices=ModelPrices(input=0.59, output=0.79)
    ),
    "groq/llama-3.1-8b-instant": ModelInfo(
        context_window=131_072, prices=ModelPrices(input=0.05, output=0.08)
    ),
    # Mistral, mistral.ai/pricing, taken 2025-10-01 (cache prices not known).
    # Images: Mistral Medium 3 and Small 3.1 and later read them; DeepSeek's and the Llama
    # models above are text only (so a request with images to them is refused).
    "mistral/mistral-medium-latest": ModelInfo(
        context_window=128_000, prices=ModelPrices(input=0.4, output=2), images=True
    ),
    "mistral/mistral-small-latest": ModelInfo(
        context_window=128_000, prices=ModelPrices(input=0.1, output=0.3), images=True
    ),
}

MODEL_CATALOG: Final[Mapping[str, ModelInfo]] = MappingProxyType(_CATALOG)
"""Every model tether knows, by ``PROVIDER/MODEL`` spec (read-only)."""


def model_info(spec: str) -> ModelInfo | None:
    """The catalog's entry for ``"PROVIDER/MODEL"``, or ``None``. An Anthropic model ID
    ending in a date, ``-latest`` or ``-0`` (``claude-sonnet-4-5-20250929``,
    ``claude-sonnet-4-0``) finds the entry of the ID without it."""
    found = _CATALOG.get(spec)
    if found is None and spec.startswith("anthropic/"):
        found = _CATALOG.get(_SUFFIX.sub("", spec))
    return found
