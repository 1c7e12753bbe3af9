"""Model providers. Only the offline fixture provider exists so far."""

from tether.providers.fixture import (
    FixtureProviderAdapter,
    FixtureProviderError,
    FixtureProviderErrorCode,
)

__all__ = ["FixtureProviderAdapter", "FixtureProviderError", "FixtureProviderErrorCode"]
