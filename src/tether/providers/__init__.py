"""Model providers: the offline fixture replay (``fixture``) and the real HTTP providers.

* ``fixture``: ``FixtureProviderAdapter``, the workshop's transport trust boundary;
* ``errors``: ``ProviderError`` and its codes, for every real provider;
* ``_http`` / ``_watch`` / ``_decoding`` / ``_sse`` / ``_streaming``: the shared HTTP client,
  retries, deadlines and abort enforced in the request's task, ``Content-Encoding`` decoding,
  the SSE decoder, and the ``Model`` base both providers build on;
* ``openai_wire`` / ``openai_chat``: OpenAI Chat Completions (``OpenAIChatModel``);
* ``anthropic_wire`` / ``anthropic``: Anthropic Messages (``AnthropicModel``);
* ``catalog``: provider presets (base URL, key variable, quirks) by name.

Importing this package loads only the fixture provider; the HTTP providers (and httpx2)
load on first use.
"""

from tether.providers.fixture import (
    FixtureProviderAdapter,
    FixtureProviderError,
    FixtureProviderErrorCode,
)

__all__ = ["FixtureProviderAdapter", "FixtureProviderError", "FixtureProviderErrorCode"]
