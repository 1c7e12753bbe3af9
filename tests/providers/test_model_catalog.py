"""The model catalog (``tether.providers.model_catalog``): prices, limits, and what usage
costs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.protocol import ModelUsage
from tether.providers.model_catalog import (
    MODEL_CATALOG,
    Cost,
    ModelInfo,
    ModelPrices,
    cost_of,
    model_info,
)
from tether.providers.registry import REGISTRY


def test_every_catalog_model_belongs_to_a_preset_and_has_its_limits() -> None:
    presets = REGISTRY.presets()
    for spec, info in MODEL_CATALOG.items():
        provider, _, model = spec.partition("/")
        assert provider in presets, spec
        assert model
        assert info.context_window is not None
        assert info.prices.input is not None
        assert info.prices.output is not None


def test_anthropic_cache_prices_follow_the_published_multipliers() -> None:
    info = model_info("anthropic/claude-sonnet-4-5")
    assert info is not None
    assert info.prices == ModelPrices(input=3, output=15, cache_read=0.3, cache_write=3.75)
    assert info.context_window == 200_000
    # a dated ID finds its alias's entry; other providers' names are taken as they are
    assert model_info("anthropic/claude-sonnet-4-5-20250929") is info
    assert model_info("anthropic/claude-sonnet-4-0") is MODEL_CATALOG["anthropic/claude-sonnet-4"]
    assert model_info("openai/gpt-4o-20240806") is None
    assert model_info("ollama/qwen3") is None


def test_cached_tokens_are_priced_at_the_cache_prices() -> None:
    prices = ModelPrices(input=3, output=15, cache_read=0.3, cache_write=3.75)
    usage = ModelUsage(
        input_tokens=1_000, output_tokens=2_000, cache_read_tokens=100_000, cache_write_tokens=0
    )
    cost = cost_of(usage, prices)
    assert cost is not None
    assert cost == Cost(input=0.003, output=0.03, cache_read=0.03, cache_write=0.0)
    assert math.isclose(cost.total, 0.063)
    assert cost.to_json()["totalUsd"] == cost.total


def test_a_count_without_a_price_makes_the_cost_unknown() -> None:
    prices = ModelPrices(input=1, output=2)
    assert cost_of(ModelUsage(input_tokens=5, output_tokens=5), prices) is not None
    assert cost_of(ModelUsage(input_tokens=5, output_tokens=5, cache_read_tokens=1), prices) is None
    # a model nothing is known about costs "unknown", not 0, even for no tokens
    assert cost_of(ModelUsage(input_tokens=0, output_tokens=0), None) is None
    assert cost_of(ModelUsage(input_tokens=0, output_tokens=0), ModelPrices()) is None


def test_config_prices_override_the_catalog_one_by_one() -> None:
    base = ModelPrices(input=3, output=15, cache_read=0.3, cache_write=3.75)
    assert ModelPrices(input=2).over(base) == ModelPrices(
        input=2, output=15, cache_read=0.3, cache_write=3.75
    )
    assert ModelPrices(output=1).over(None) == ModelPrices(output=1)


@pytest.mark.parametrize("bad", [-1, math.inf, math.nan, True, "1"])
def test_a_price_is_a_finite_number_at_least_0(bad: object) -> None:
    with pytest.raises(ValueError, match=r"ModelPrices\.input"):
        ModelPrices(input=bad)  # pyright: ignore[reportArgumentType]


def test_model_info_checks_its_limits() -> None:
    with pytest.raises(ValueError, match="context_window"):
        ModelInfo(context_window=0)
    with pytest.raises(TypeError, match="prices"):
        ModelInfo(prices=None)  # pyright: ignore[reportArgumentType]


_COUNT = st.integers(0, 10**9)
_PRICE = st.none() | st.floats(0, 1000)


@given(_COUNT, _COUNT, _COUNT, _COUNT, _PRICE, _PRICE, _PRICE, _PRICE)
def test_cost_is_known_exactly_when_every_count_spent_has_a_price(
    tokens_in: int,
    tokens_out: int,
    read: int,
    write: int,
    price_in: float | None,
    price_out: float | None,
    price_read: float | None,
    price_write: float | None,
) -> None:
    usage = ModelUsage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
    prices = ModelPrices(
        input=price_in, output=price_out, cache_read=price_read, cache_write=price_write
    )
    pairs = [
        (tokens_in, price_in),
        (tokens_out, price_out),
        (read, price_read),
        (write, price_write),
    ]
    cost = cost_of(usage, prices)
    known = prices.known and all(price is not None for count, price in pairs if count)
    assert (cost is not None) == known
    if cost is not None:
        expected = sum(count * (price or 0.0) for count, price in pairs) / 1_000_000
        assert math.isclose(cost.total, expected, rel_tol=1e-9, abs_tol=1e-12)
        assert cost.total >= 0
        assert (cost + cost).total == pytest.approx(2 * cost.total)
