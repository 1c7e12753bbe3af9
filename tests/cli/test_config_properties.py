"""Property tests of the config file checker (``tether.cli.config_reader.ConfigReader``):
whatever a parsed TOML file holds (any table, key and value ``tomllib`` can make, shaped like
the tables the file may hold), it becomes a ``CliConfig`` or one ``CliConfigError`` coded
``CLI_CONFIG_INVALID``; never another exception. The bytes-to-TOML step (``load_config``) is
checked on arbitrary text too."""

from __future__ import annotations

import datetime
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from tether.cli.config import load_config
from tether.cli.config_reader import ConfigReader
from tether.cli.config_values import CliConfig, CliConfigError

PATH = Path("/nonexistent/tether/config.toml")

# What tomllib makes: strings, integers, floats (NaN and infinities too), booleans, dates and
# times, arrays and tables.
scalars = (
    st.text(max_size=12)
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.datetimes()
    | st.dates()
    | st.times()
    | st.sampled_from(["openai-chat", "http://127.0.0.1:8080/v1", "ask", "auto", "on", "high"])
    | st.sampled_from(["openai/gpt-4o", "OPENAI_API_KEY", "/tmp", "~/x", "bash", "read"])
    | st.sampled_from([0, 1, 86_400, 86_401, -1, 1e9, 0.5])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def table(keys: list[str], inner: st.SearchStrategy[object] = values) -> st.SearchStrategy[object]:
    """A table holding some of ``keys`` (and now and then another key), or any value."""
    names = st.sampled_from(keys) | st.text(max_size=8)
    return st.dictionaries(names, inner, max_size=len(keys)) | values


providers = st.dictionaries(
    st.sampled_from(["local", "openai", "a b", "x" * 40]) | st.text(max_size=8),
    table(["base_url", "api_key_env", "api"]),
    max_size=2,
)
PRICED = ("input", "output", "cache_read", "cache_write")
MODEL_KEYS = [
    "context_window",
    "max_output_tokens",
    "thinking",
    "input_cost",  # the older names of two prices
    "output_cost",
    *(f"{kind}_price" for kind in PRICED),
]
models = st.dictionaries(
    st.sampled_from(["openai/gpt-4o", "local/m", "nope/m", "openai/", "/m"]) | st.text(max_size=8),
    table(MODEL_KEYS),
    max_size=2,
)
tools = table(["auto_approve", "approve", "pass_env", "sandbox", "sandbox_network", "sandbox_hide"])
mcp_servers = st.dictionaries(
    st.sampled_from(["fs", "a__b", "web"]) | st.text(max_size=8),
    table(
        [
            "command",
            "args",
            "env",
            "cwd",
            "url",
            "headers",
            "http_headers",
            "bearer_token_env_var",
            "enabled",
            "startup_timeout_sec",
            "tool_timeout_sec",
            "approval",
            "tool_approval",
        ]
    ),
    max_size=2,
)
specs = st.sampled_from(["openai/gpt-4o", "local/m", "nope/m"])
documents = st.fixed_dictionaries(
    {},
    optional={
        "default_model": specs | values,
        "extensions": st.lists(st.sampled_from(["a", "b.c", "-x"]), max_size=2) | values,
        "extension_timeout": st.floats(0, 90_000) | values,
        "thinking": st.sampled_from(["off", "high"]) | values,
        "providers": providers | values,
        "models": models | values,
        "tools": tools,
        "mcp_servers": mcp_servers | values,
        "tracing": table(["enabled", "record_content"]),
    },
)
"""Each key of the file, more often a value of the right kind than not, so that a document
often gets past the first keys to the later ones (the reader stops at the first problem)."""


def outcome(read: Callable[[], CliConfig]) -> CliConfig | CliConfigError:
    """The config ``read`` returns, or the config error it raises."""
    try:
        return read()
    except CliConfigError as error:
        return error


@given(documents)
def test_every_parsed_document_is_a_config_or_a_coded_refusal(
    document: dict[str, object],
) -> None:
    result = outcome(lambda: ConfigReader(PATH).config(document))
    if isinstance(result, CliConfigError):
        assert result.code == "CLI_CONFIG_INVALID"
        assert str(result).startswith(f"{PATH}: ")
        return
    assert isinstance(result, CliConfig)
    assert set(result.providers) <= set(cast("dict[str, object]", document.get("providers", {})))


@given(st.text(max_size=200) | st.binary(max_size=200))
def test_every_file_is_a_config_or_a_coded_refusal(content: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.toml"
        path.write_bytes(
            content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
        )
        result = outcome(lambda: load_config(path))
    if isinstance(result, CliConfigError):
        assert result.code == "CLI_CONFIG_INVALID", result
    else:
        assert result.found


def test_a_time_of_day_is_not_a_number_of_seconds() -> None:
    result = outcome(lambda: ConfigReader(PATH).config({"extension_timeout": datetime.time(1)}))
    assert isinstance(result, CliConfigError)
    assert "'extension_timeout'" in str(result)
