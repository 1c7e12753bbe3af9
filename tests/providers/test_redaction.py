"""API keys never leave a model in an error: ``redact`` and ``redact_error``, and the key-leak
search over loopback (error bodies whose vendor ``code`` echoes the key, error events, and
redirects whose ``Location`` carries it): neither the message nor ``provider_code`` holds it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servers.replay import ReplayServer, json_response, redirect_response, sse_body, sse_response
from tether import AbortController, ModelRequest, UserMessage
from tether.providers._http import RetryPolicy, redact, redact_error
from tether.providers._streaming import HttpStreamModel
from tether.providers.anthropic import AnthropicModel
from tether.providers.errors import MAX_ERROR_TEXT, MAX_PROVIDER_CODE, ProviderError
from tether.providers.gemini import GeminiModel
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.openai_responses import OpenAIResponsesModel

SECRET = "sk-test-0123456789abcdef"


def test_every_occurrence_is_replaced() -> None:
    assert redact(f"a {SECRET} b {SECRET}", SECRET) == "a [redacted] b [redacted]"
    assert redact("nothing here", SECRET) == "nothing here"
    assert redact(f"keep {SECRET}", None) == f"keep {SECRET}"


def test_a_key_cut_off_by_the_length_limit_is_redacted_too() -> None:
    message = "x" * (MAX_ERROR_TEXT - 10) + SECRET
    error = ProviderError("PROVIDER_ERROR_EVENT", message, status=200, provider_code="invalid")
    assert error.message.endswith("…")
    assert SECRET[:9] in error.message  # the shortened message ends with the key's start
    cleaned = redact_error(error, SECRET)
    assert isinstance(cleaned, ProviderError)
    assert SECRET[:4] not in cleaned.message
    assert cleaned.message.endswith("[redacted]…")
    assert (cleaned.code, cleaned.status, cleaned.provider_code) == (
        "PROVIDER_ERROR_EVENT",
        200,
        "invalid",
    )


def test_errors_without_the_key_pass_unchanged() -> None:
    error = ProviderError("PROVIDER_ERROR_EVENT", "overloaded")
    assert redact_error(error, SECRET) is error
    other = ValueError("plain")
    assert redact_error(other, SECRET) is other
    assert redact_error(error, None) is error


def test_another_exception_carrying_the_key_becomes_a_protocol_error() -> None:
    cleaned = redact_error(ValueError(f"bad {SECRET}"), SECRET)
    assert isinstance(cleaned, ProviderError)
    assert cleaned.code == "PROVIDER_PROTOCOL_ERROR"
    assert cleaned.message == "bad [redacted]"


@given(
    before=st.text(max_size=60),
    after=st.text(max_size=60),
    secret=st.text(alphabet="abcdef0123456789-_", min_size=8, max_size=40),
    cut=st.integers(min_value=0, max_value=200),
)
def test_no_key_survives_in_a_shortened_message(
    before: str, after: str, secret: str, cut: int
) -> None:
    text = (before + secret + after)[: max(cut, 1)]
    cleaned = redact(text, secret)
    assert secret not in cleaned
    trailing = cleaned.removesuffix("…")
    assert not any(
        trailing.endswith(secret[:size]) and not text.startswith(secret[:size])
        for size in range(4, len(secret))
        if text.endswith(secret[:size])
    )


def test_a_provider_code_is_bounded_and_redacted() -> None:
    error = ProviderError("PROVIDER_BAD_REQUEST", "bad", provider_code="x" * 10_000)
    assert error.provider_code is not None
    assert len(error.provider_code) <= MAX_PROVIDER_CODE
    assert error.provider_code.endswith("…")
    leaking = ProviderError("PROVIDER_BAD_REQUEST", "bad", provider_code=f"key {SECRET} bad")
    cleaned = redact_error(leaking, SECRET)
    assert isinstance(cleaned, ProviderError)
    assert cleaned.provider_code == "key [redacted] bad"
    assert cleaned.message == "bad"


# --- the key-leak search over loopback: error bodies, error events, redirects ---------------

LOOPBACK_SECRET = "sk-test-LEAK-0123456789abcdefgh"


def _leak_model(kind: str, server: ReplayServer, **options: Any) -> HttpStreamModel:
    retry = RetryPolicy(attempts=1)
    if kind == "openai":
        return OpenAIChatModel("m", base_url=server.url, api_key=LOOPBACK_SECRET, retry=retry)
    if kind == "responses":
        return OpenAIResponsesModel("m", base_url=server.url, api_key=LOOPBACK_SECRET, retry=retry)
    if kind == "gemini":
        return GeminiModel("m", base_url=server.origin, api_key=LOOPBACK_SECRET, retry=retry)
    return AnthropicModel("m", base_url=server.origin, api_key=LOOPBACK_SECRET, retry=retry)


async def _error_of(model: HttpStreamModel) -> ProviderError:
    request = ModelRequest(id="request-001", messages=(UserMessage(content="hi"),))
    stream = model.stream(request, AbortController().signal)
    with pytest.raises(ProviderError) as caught:
        async with asyncio.timeout(20):
            await stream.result
    return caught.value


def _no_key_in(error: ProviderError) -> None:
    shown = " ".join(
        [str(error), error.message, repr(error), str(error.provider_code), repr(error.args)]
    )
    assert LOOPBACK_SECRET not in shown
    assert LOOPBACK_SECRET[:12] not in shown
    code = error.provider_code
    assert code is None or len(code) <= MAX_PROVIDER_CODE


@pytest.mark.parametrize("kind", ["openai", "anthropic", "responses", "gemini"])
async def test_a_vendor_code_that_echoes_the_key_never_carries_it(kind: str) -> None:
    echo = f"invalid_key:{LOOPBACK_SECRET}:" + "x" * 5000
    async with ReplayServer() as server:
        server.respond(json_response(401, {"error": {"message": "no", "code": echo}}))
        async with _leak_model(kind, server) as model:
            error = await _error_of(model)
    assert error.code == "PROVIDER_AUTH_FAILED"
    assert error.provider_code is not None
    assert error.provider_code.startswith("invalid_key:[redacted]")
    _no_key_in(error)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "error", "error": {"code": f"weird_{LOOPBACK_SECRET}_error", "message": "echo"}},
        {"type": "error", "code": f"weird_{LOOPBACK_SECRET}_error", "message": "echo"},
        {
            "type": "response.failed",
            "response": {
                "id": "resp_1",
                "status": "failed",
                "error": {"code": f"weird_{LOOPBACK_SECRET}_error", "message": "echo"},
            },
        },
    ],
)
async def test_a_responses_error_event_that_echoes_the_key_never_carries_it(
    event: dict[str, Any],
) -> None:
    fields: dict[str, Any] = event.get("error") or event.get("response", {}).get("error") or event
    fields["message"] = "echo " + LOOPBACK_SECRET
    async with ReplayServer() as server:
        server.respond(sse_response(sse_body([event], done=False, event_from_type=True)))
        async with _leak_model("responses", server) as model:
            error = await _error_of(model)
    assert error.code == "PROVIDER_ERROR_EVENT"
    assert error.provider_code == "weird_[redacted]_error"
    assert "echo [redacted]" in error.message
    _no_key_in(error)


async def test_an_error_event_type_that_echoes_the_key_never_carries_it() -> None:
    kind = f"weird_{LOOPBACK_SECRET}_error"
    event = {"type": "error", "error": {"type": kind, "message": "echo " + LOOPBACK_SECRET}}
    async with ReplayServer() as server:
        server.respond(sse_response(sse_body([event], done=False, event_from_type=True)))
        async with _leak_model("anthropic", server) as model:
            error = await _error_of(model)
    assert error.code == "PROVIDER_ERROR_EVENT"
    assert error.provider_code == "weird_[redacted]_error"
    _no_key_in(error)


@pytest.mark.parametrize("kind", ["openai", "anthropic", "responses", "gemini"])
async def test_a_redirect_whose_location_echoes_the_key_never_carries_it(kind: str) -> None:
    location = f"http://127.0.0.1:9/v1/messages?key={LOOPBACK_SECRET}&pad=" + "p" * 5000
    async with ReplayServer() as server:
        server.respond(redirect_response(307, location))
        async with _leak_model(kind, server) as model:
            error = await _error_of(model)
    assert error.code == "PROVIDER_REDIRECTED"
    assert "http://127.0.0.1:9/v1/messages?key=[redacted]" in error.message
    assert len(error.message) < 1000
    _no_key_in(error)


async def test_a_gemini_error_payload_that_echoes_the_key_never_carries_it() -> None:
    error = {"code": 400, "message": "echo " + LOOPBACK_SECRET, "status": f"S_{LOOPBACK_SECRET}"}
    async with ReplayServer() as server:
        server.respond(sse_response(sse_body([{"error": error}], done=False)))
        async with _leak_model("gemini", server) as model:
            raised = await _error_of(model)
    assert raised.code == "PROVIDER_ERROR_EVENT"
    assert raised.provider_code == "S_[redacted]"
    _no_key_in(raised)
