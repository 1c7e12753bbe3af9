"""``loads_payload``: one vendor JSON payload, parsed exactly as ``json.loads`` parses it.

Its fast path calls the scanner ``json.loads`` ends in directly (see its docstring); these
tests check it against the plain path, ``json.loads`` itself, on any text: the same value
(with the same types) or a ``PROVIDER_PROTOCOL_ERROR`` exactly when ``json.loads`` raises,
carrying ``json.loads``' own message.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.providers._streaming import loads_payload
from tether.providers.errors import ProviderError

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
WHITESPACE = st.text(alphabet=" \t\n\r", max_size=3)
NOISE = st.text(alphabet=' \t\n\r{}[]":,.-+0123456789eEaflnrstu\\\ufeff', max_size=30)


def same(left: Any, right: Any) -> bool:
    """Equal values of equal types all the way down (NaN equal to NaN)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        return left == right or (math.isnan(left) and math.isnan(right))
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(left, dict):
        return list(left) == list(right) and all(same(left[k], right[k]) for k in left)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    return left == right


def check(text: str | bytes) -> None:
    """``loads_payload(text)`` is ``json.loads(text)``: its value, or its error's message."""
    failure: str | None = None
    expected: object = None
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError) as error:
        failure = f"The server sent invalid JSON: {error}"[:300]
    if failure is None:
        assert same(loads_payload(text), expected)
        return
    with pytest.raises(ProviderError) as caught:
        loads_payload(text)
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    assert caught.value.message == failure


@given(value=JSON_VALUES, before=WHITESPACE, after=WHITESPACE, compact=st.booleans())
def test_any_json_text_with_any_whitespace_parses_as_json_loads_does(
    value: object, before: str, after: str, compact: bool
) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    text = before + json.dumps(value, separators=separators) + after
    check(text)
    check(text.encode())


@given(st.text(max_size=40) | NOISE)
def test_any_text_parses_or_fails_as_json_loads_does(text: str) -> None:
    check(text)


@given(value=JSON_VALUES, extra=NOISE.filter(lambda noise: noise.strip(" \t\n\r") != ""))
def test_extra_data_after_a_value_fails_as_json_loads_does(value: object, extra: str) -> None:
    check(json.dumps(value) + extra)


@pytest.mark.parametrize(
    "text",
    [
        "\ufeff{}",  # a BOM: json.loads refuses it
        "",
        " ",
        "[DONE]",
        "{} {}",
        '{"a": 1} \n',
        "NaN",
        "-Infinity",
        "1" * 5000,  # more digits than int() converts: ValueError
        "[" * 100_000,  # nests too deeply: RecursionError
        '{"a":"\\ud800"}',  # a lone surrogate escape is accepted by json.loads
    ],
)
def test_edge_cases_match_json_loads(text: str) -> None:
    check(text)


def test_the_scanner_keeps_no_state_between_payloads() -> None:
    # the scanner's memo of keys lives for one call only
    first = loads_payload('{"key": {"key": 1}}')
    assert loads_payload('{"key": 2}') == {"key": 2}
    assert first == {"key": {"key": 1}}
