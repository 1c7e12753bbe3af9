"""Model providers: the offline fixture replay (``fixture``) and the real HTTP providers.

* ``fixture``: ``FixtureProviderAdapter``, the workshop's transport trust boundary;
* ``errors``: ``ProviderError`` and its codes, for every real provider;
* ``_http`` / ``_watch`` / ``_decoding`` / ``_sse`` / ``_streaming``: the shared HTTP client,
  retries, deadlines and abort enforced in the request's task, ``Content-Encoding`` decoding,
  the SSE decoder, and the ``Model`` base every HTTP provider builds on;
* ``openai_wire`` / ``openai_chat_stream`` / ``openai_chat_body`` / ``openai_chat``: OpenAI
  Chat Completions: the request body, the streamed answer, a whole JSON answer, the model
  (``OpenAIChatModel``);
* ``anthropic_wire`` / ``anthropic_stream`` / ``anthropic``: Anthropic Messages: the request
  body, the streamed answer, the model (``AnthropicModel``);
* ``responses_request`` / ``responses_wire`` / ``openai_responses``: the OpenAI Responses
  API, its request body (and reasoning replay), its stream (``OpenAIResponsesModel``);
* ``gemini_request`` / ``gemini_schema`` / ``gemini_wire`` / ``gemini``: Google's native
  Gemini API, its request body, tool schemas and stream (``GeminiModel``);
* ``_wire``: what every wire module shares (errors about a payload, arguments, call IDs);
* ``registry``: one ``ApiSpec`` per wire API (``openai_chat_api``, ``anthropic_api``,
  ``openai_responses_api``, ``gemini_api``: its model class, loaded on first use, and its
  presets), from which the rest derives;
* ``catalog``: provider presets (base URL, key variable, quirks) by name;
* ``model_catalog``: what tether knows about the presets' models (``ModelInfo``: context
  window, max output tokens, prices) and what usage costs (``Cost``, ``cost_of``);
* ``openai_compat``: ``OpenAIChatCompat``, the quirks of one OpenAI-compatible server.

Importing this package loads none of them: the fixture provider's names below load on first
use (the loop imports ``errors``, which must not build the fixture boundary's classes with
it: ``benchmarks/bench_import.py``), and the HTTP providers (and httpx2) load when a module
imports them.
"""

from tether._base.lazy import lazy_exports

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: nothing but ``tether._base.lazy`` loads here

if TYPE_CHECKING:
    from tether.providers.fixture import (
        FixtureProviderAdapter,
        FixtureProviderError,
        FixtureProviderErrorCode,
    )

__all__ = ["FixtureProviderAdapter", "FixtureProviderError", "FixtureProviderErrorCode"]

__getattr__, __dir__ = lazy_exports(__name__, {"fixture": tuple(__all__)}, globals())
