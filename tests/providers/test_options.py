"""Option checks of the HTTP providers: every bad option is a ``TypeError`` naming it, at
construction, before any request; and the retry/timeout values' own rules."""

from __future__ import annotations

from typing import Any

import pytest

from tether.providers._http import RetryPolicy, Timeouts, error_for_status
from tether.providers.anthropic import AnthropicModel
from tether.providers.gemini import GeminiModel
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.openai_responses import OpenAIResponsesModel


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"model": ""}, "model"),
        ({"model": "m", "base_url": "ftp://x"}, "base_url"),
        ({"model": "m", "api_key": ""}, "api_key"),
        ({"model": "m", "max_output_tokens": 0}, "max_output_tokens"),
        ({"model": "m", "thinking_budget": 10}, "thinking_budget"),
        ({"model": "m", "thinking_budget": 8192, "max_output_tokens": 4096}, "thinking_budget"),
        ({"model": "m", "anthropic_version": ""}, "anthropic_version"),
        ({"model": "m", "retry": object()}, "retry"),
        ({"model": "m", "timeouts": object()}, "timeouts"),
    ],
)
def test_anthropic_model_options_are_checked(options: dict[str, Any], named: str) -> None:
    with pytest.raises(TypeError, match=named):
        AnthropicModel(**options)


@pytest.mark.parametrize(
    ("model_class", "example"),
    [
        (AnthropicModel, "claude-sonnet-4-5"),
        (OpenAIChatModel, "gpt-4o-mini"),
        (OpenAIResponsesModel, "gpt-5"),
        (GeminiModel, "gemini-2.5-flash"),
    ],
)
@pytest.mark.parametrize("model", ["", " ", None])
def test_a_missing_model_name_is_refused_with_a_vendor_example(
    model_class: Any, example: str, model: object
) -> None:
    """Each model names one of its vendor's models in the error (``_MODEL_EXAMPLE``)."""
    with pytest.raises(TypeError) as caught:
        model_class(model)
    assert str(caught.value) == f"model must be a non-empty model name, e.g. {example!r}"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"model": " "}, "model"),
        ({"model": "m", "base_url": "api.openai.com"}, "base_url"),
        ({"model": "m", "api_key": ""}, "api_key"),
        ({"model": "m", "max_output_tokens": -1}, "max_output_tokens"),
        ({"model": "m", "compat": object()}, "compat"),
    ],
)
def test_openai_chat_model_options_are_checked(options: dict[str, Any], named: str) -> None:
    with pytest.raises(TypeError, match=named):
        OpenAIChatModel(**options)


@pytest.mark.parametrize(
    "options",
    [
        {"attempts": 0},
        {"attempts": True},
        {"initial_backoff": -1},
        {"max_backoff": float("inf")},
        {"max_retry_after": "5"},
        {"jitter": 2},
    ],
)
def test_retry_policy_values_are_checked(options: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="RetryPolicy"):
        RetryPolicy(**options)


@pytest.mark.parametrize("options", [{"connect": 0}, {"idle": -1}, {"first_byte": "1"}])
def test_timeouts_are_checked(options: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="Timeouts"):
        Timeouts(**options)


def test_backoff_grows_to_its_cap_with_bounded_jitter() -> None:
    policy = RetryPolicy(initial_backoff=0.5, max_backoff=4.0, jitter=0.25)
    assert [policy.backoff(n, lambda: 0.0) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert policy.backoff(0, lambda: 1.0) == 0.375


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after-ms": "x", "retry-after": "3"}, 3.0),
        ({}, None),
    ],
)
def test_retry_after_is_read_from_the_headers(
    headers: dict[str, str], expected: float | None
) -> None:
    error = error_for_status(429, headers, b"plain text body", None)
    assert error.code == "PROVIDER_RATE_LIMITED"
    assert error.retry_after == expected
    assert error.message == "HTTP 429: plain text body"


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (401, b'{"error": "no"}', "PROVIDER_AUTH_FAILED"),
        (503, b"", "PROVIDER_OVERLOADED"),
        (
            529,
            b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
            "PROVIDER_OVERLOADED",
        ),
        (502, b"[1, 2]", "PROVIDER_SERVER_ERROR"),
        (413, b'{"error": {"message": "prompt is too long"}}', "PROVIDER_CONTEXT_OVERFLOW"),
        (422, b'{"error": {"message": "bad", "type": "invalid"}}', "PROVIDER_BAD_REQUEST"),
    ],
)
def test_statuses_map_to_codes(status: int, body: bytes, code: str) -> None:
    error = error_for_status(status, {}, body, "sk-secret")
    assert error.code == code
    assert error.status == status
    assert "sk-secret" not in error.message
