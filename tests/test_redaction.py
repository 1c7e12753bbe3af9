"""API keys never leave a model in an error: ``redact`` and ``redact_error``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.providers._http import redact, redact_error
from tether.providers.errors import MAX_ERROR_TEXT, ProviderError

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
