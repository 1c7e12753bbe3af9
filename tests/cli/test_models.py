"""``tether models``, the config file and the advice table, from the outside and the inside.

As a subprocess: ``tether models`` with keys set and unset (never their values), ``--json``
(every line parsed), the config's providers, model settings and default model, where the
config is found (``TETHER_CONFIG``, ``XDG_CONFIG_HOME``), and config errors (an unknown key,
a key pasted where its variable's name belongs) with exit 2 and a message naming the key and
the file. In process: every rule of ``load_config``, ``choose_model``, ``display_url`` and
the ``run_problem`` advice, and the lists the CLI spells out (presets, coding tools, step
ceilings) kept equal to the runtime's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether import CancelledRunResult, FailedRunResult, RunError, UserMessage
from tether.cli import config as config_module
from tether.cli import parser as parser_module
from tether.cli.config import (
    APPROVABLE_TOOLS,
    DEFAULT_APPROVE,
    CliConfigError,
    CliError,
    load_config,
)
from tether.cli.config import config_path as find_config
from tether.cli.models import ModelChoice, choose_model, display_url, run_problem
from tether.providers.errors import ProviderError
from tether.providers.openai_chat import OpenAIChatModel

TETHER = Path(sys.executable).parent / "tether"
FAKE_KEY = "sk-tether-FAKE-MODELS-KEY-55aa-never-print-me"
_SCRUBBED = ("PYTHONDEVMODE", "PYTHONASYNCIODEBUG", "PYTHONWARNINGS", "TETHER_CONFIG")


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.endswith("_API_KEY") and name not in _SCRUBBED
    }
    env["TETHER_CONFIG"] = str(tmp_path / "config.toml")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    env["PYTHONWARNINGS"] = "default"
    env.update(extra)
    return env


def tether(*arguments: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(
        [str(TETHER), *arguments],
        capture_output=True,
        text=True,
        encoding="utf-8",
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
        timeout=30,
    )
    assert FAKE_KEY not in completed.stdout
    assert FAKE_KEY not in completed.stderr
    return completed


def json_rows(output: str) -> list[dict[str, Any]]:
    assert output.endswith("\n")
    return [json.loads(line) for line in output.split("\n")[:-1]]


CONFIG = """\
default_model = "gpu-box/qwen3-coder"
extensions = ["hello", "team.tools"]

[providers.gpu-box]
base_url = "http://user:secret@gpu-box:8000/v1"
api_key_env = "GPU_BOX_TOKEN"

[providers.local-claude]
base_url = "http://127.0.0.1:9999"
api = "anthropic-messages"

[models."gpu-box/qwen3-coder"]
context_window = 131072
max_output_tokens = 8192

[models."openai/gpt-4o-mini"]

[tools]
auto_approve = true
approve = ["bash", "write_file", "bash"]
"""


# --- tether models ----------------------------------------------------------------------------


@pytest.mark.slow
def test_models_lists_providers_and_which_keys_are_set(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    env = child_env(tmp_path, OPENAI_API_KEY=FAKE_KEY, GPU_BOX_TOKEN=FAKE_KEY)

    completed = tether("models", env=env)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    lines = completed.stdout.splitlines()
    assert lines[0].split() == ["PROVIDER", "API", "BASE", "URL", "API", "KEY"]
    table = lines[1 : lines.index("")] if "" in lines else lines[1:]
    row = {line.split()[0]: line for line in table}
    assert row["openai"].endswith("OPENAI_API_KEY (set)")
    assert "https://api.openai.com/v1" in row["openai"]
    assert row["anthropic"].endswith("ANTHROPIC_API_KEY (not set)")
    assert row["google"].endswith("GEMINI_API_KEY (not set)")
    assert "gemini  " in row["google"]
    assert row["ollama"].endswith("none needed")
    assert "(config)" in row["gpu-box"]
    assert row["gpu-box"].endswith("GPU_BOX_TOKEN (set)")
    assert "secret" not in completed.stdout  # a password in a URL is not shown
    assert "http://***@gpu-box:8000/v1" in row["gpu-box"]
    assert "anthropic-messages" in row["local-claude"]
    assert "  gpu-box/qwen3-coder: context window 131072, max output tokens 8192" in lines
    assert "openai/gpt-4o-mini: nothing set" in completed.stdout
    assert "default model: gpu-box/qwen3-coder" in lines
    assert f"config file: {tmp_path / 'config.toml'}" in lines


@pytest.mark.slow
def test_models_json_is_one_object_per_line(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    env = child_env(tmp_path, ANTHROPIC_API_KEY=FAKE_KEY)

    completed = tether("models", "--json", env=env)

    assert completed.returncode == 0, completed.stderr
    rows = json_rows(completed.stdout)
    providers = {row["name"]: row for row in rows if row["type"] == "provider"}
    assert list(providers)[:2] == ["anthropic", "openai"]
    assert providers["anthropic"] == {
        "type": "provider",
        "name": "anthropic",
        "api": "anthropic-messages",
        "baseUrl": "https://api.anthropic.com",
        "apiKeyEnv": "ANTHROPIC_API_KEY",
        "keySet": True,
        "source": "preset",
    }
    assert providers["openai"]["keySet"] is False
    assert (providers["vllm"]["apiKeyEnv"], providers["vllm"]["keySet"]) == (None, None)
    assert providers["gpu-box"]["source"] == "config"
    assert providers["gpu-box"]["keySet"] is False
    models = [row for row in rows if row["type"] == "model"]
    assert models[0] == {
        "type": "model",
        "spec": "gpu-box/qwen3-coder",
        "contextWindow": 131072,
        "maxOutputTokens": 8192,
    }
    assert rows[-1] == {
        "type": "default",
        "model": "gpu-box/qwen3-coder",
        "configPath": str(tmp_path / "config.toml"),
        "configFound": True,
    }


@pytest.mark.slow
def test_without_a_config_file_models_shows_the_defaults(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    del env["TETHER_CONFIG"]
    xdg = tmp_path / "xdg"

    human = tether("models", env=env)
    machine = tether("models", "--json", env=env)

    assert human.returncode == 0
    assert "default model: none" in human.stdout
    assert "(not found: defaults)" in human.stdout
    default = json_rows(machine.stdout)[-1]
    assert default["configPath"] == str(xdg / "tether" / "config.toml")
    assert (default["model"], default["configFound"]) == (None, False)


@pytest.mark.slow
def test_the_xdg_config_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "xdg" / "tether" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('default_model = "ollama/qwen3"\n', encoding="utf-8")
    env = child_env(tmp_path)
    del env["TETHER_CONFIG"]

    rows = json_rows(tether("models", "--json", env=env).stdout)

    assert rows[-1]["model"] == "ollama/qwen3"
    assert rows[-1]["configFound"] is True


# --- config errors from the command line ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("default_modle = 'openai/gpt-4o'\n", "default_modle"),
        ("[tools]\nauto_aprove = true\n", "tools.auto_aprove"),
        (
            "[providers.box]\nbase_url = 'http://x'\nbase-url = 'http://y'\n",
            "providers.box.base-url",
        ),
        ('[models."openai/gpt-4o"]\ncontext = 5\n', 'models."openai/gpt-4o".context'),
    ],
)
def test_an_unknown_key_is_exit_2_naming_the_key_and_the_file(
    tmp_path: Path, text: str, key: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    env = child_env(tmp_path, OPENAI_API_KEY=FAKE_KEY)

    for command in (("models",), ("run", "--model", "openai/gpt-4o", "-p", "hi")):
        completed = tether(*command, env=env)
        assert completed.returncode == 2
        assert completed.stdout == ""
        assert completed.stderr.count("\n") == 1
        assert f"[CLI_CONFIG_INVALID] {path}: unknown key '{key}'" in completed.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        f'[providers.box]\nbase_url = "http://x"\napi_key = "{FAKE_KEY}"\n',
        f'[providers.box]\nbase_url = "http://x"\napi_key_env = "{FAKE_KEY}"\n',
        f'default_model = "{FAKE_KEY}"\n',
    ],
    ids=["api_key", "key-as-variable-name", "key-as-model"],
)
def test_a_pasted_key_is_never_printed_back(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")

    completed = tether("models", env=child_env(tmp_path))  # asserts the key is not shown

    assert completed.returncode == 2
    assert "[CLI_CONFIG_INVALID]" in completed.stderr


@pytest.mark.slow
def test_a_config_that_is_not_toml_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('default_model = "a/b"\n[tools\n', encoding="utf-8")

    completed = tether("models", "--json", env=child_env(tmp_path))

    assert completed.returncode == 2
    assert "[CLI_CONFIG_INVALID]" in completed.stderr
    assert "not valid TOML" in completed.stderr
    assert "line 2" in completed.stderr


@pytest.mark.slow
def test_a_config_path_that_is_a_directory_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()

    completed = tether("models", env=child_env(tmp_path))

    assert completed.returncode == 2
    assert "[CLI_CONFIG_UNREADABLE]" in completed.stderr
    assert "not a regular file" in completed.stderr


@pytest.mark.slow
def test_help_documents_the_commands_and_every_exit_status(tmp_path: Path) -> None:
    completed = tether("--help", env=child_env(tmp_path))

    assert completed.returncode == 0
    text = completed.stdout
    for command in ("run", "rpc", "models", "trace"):
        assert command in text
    for status in ("0", "1", "2", "3", "4", "130"):
        assert any(line.split()[:1] == [status] for line in text.splitlines()), status
    assert "missing" in text
    assert "API key" in text


# --- load_config, in process ------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_full_config_is_read_into_frozen_values(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CONFIG))

    assert config.found
    assert config.default_model == "gpu-box/qwen3-coder"
    box = config.providers["gpu-box"]
    assert (box.base_url, box.api_key_env, box.api) == (
        "http://user:secret@gpu-box:8000/v1",
        "GPU_BOX_TOKEN",
        "openai-chat",
    )
    assert config.providers["local-claude"].api_key_env is None
    assert config.models["gpu-box/qwen3-coder"].context_window == 131072
    assert config.models["openai/gpt-4o-mini"].max_output_tokens is None
    assert config.tools.auto_approve is True
    assert config.tools.approve == ("bash", "write_file")
    assert config.extensions == ("hello", "team.tools")
    with pytest.raises(TypeError):
        config.providers["x"] = box  # type: ignore[index]
    with pytest.raises(AttributeError):
        config.default_model = "x/y"  # type: ignore[misc]


def test_a_missing_file_is_the_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.toml")

    assert not config.found
    assert config.default_model is None
    assert dict(config.providers) == {}
    assert dict(config.models) == {}
    assert config.tools.auto_approve is False
    assert config.tools.approve == DEFAULT_APPROVE
    assert config.extensions == ()


def test_an_empty_file_is_the_defaults_too(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, ""))

    assert config.found
    assert config.tools.approve == DEFAULT_APPROVE


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("default_model = 3\n", "'default_model' must be a string"),
        ("default_model = 'gpt-4o'\n", "'default_model' must be PROVIDER/MODEL"),
        ("default_model = 'nope/x'\n", "'default_model' names an unknown provider"),
        ("providers = 3\n", "'providers' must be a table"),
        ("[providers]\nbox = 3\n", "'providers.box' must be a table"),
        ("[providers.box]\napi = 'openai-chat'\n", "'providers.box.base_url' is missing"),
        ("[providers.box]\nbase_url = 'gpu-box:8000'\n", "must be an http:// or https:// URL"),
        ("[providers.box]\nbase_url = 'http://x'\napi = 'grpc'\n", "'providers.box.api' must be"),
        ("[providers.box]\nbase_url = 'http://x'\napi_key_env = 7\n", "the NAME of an environ"),
        ("[providers.openai]\nbase_url = 'http://x'\n", "'openai' is a built-in provider"),
        ("[providers.\"my box\"]\nbase_url = 'http://x'\n", "a provider name is letters"),
        ("[providers.box]\nbase_url = 'http://x'\napi_key = 'k'\n", "set api_key_env"),
        ('[models."nope/x"]\n', "names an unknown provider"),
        ('[models."gpt-4o"]\n', "must be PROVIDER/MODEL"),
        ('[models."openai/x"]\ncontext_window = 0\n', "must be a positive integer"),
        ('[models."openai/x"]\nmax_output_tokens = true\n', "must be a positive integer"),
        ('[models."openai/x"]\nmax_output_tokens = 1.5\n', "must be a positive integer"),
        ("models = []\n", "'models' must be a table"),
        ("[tools]\nauto_approve = 'yes'\n", "must be true or false"),
        ("[tools]\napprove = 'bash'\n", "must be a list of tool names"),
        ("[tools]\napprove = ['rm_rf']\n", "may name only these tools"),
        ("[tools]\napprove = [1]\n", "may name only these tools"),
        ("tools = 1\n", "'tools' must be a table"),
        ("extensions = 'hello'\n", "'extensions' must be a list"),
        ("extensions = ['a b']\n", "may hold only entry point names"),
        ("extensions = [1]\n", "may hold only entry point names"),
        ("extensions = ['a', 'a']\n", "names 'a' twice"),
        (f"x{'y' * 200} = 1\n", "unknown key '<a 201-character key, not shown>'"),
    ],
)
def test_each_rule_of_the_config_file(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path, text)

    with pytest.raises(CliConfigError) as caught:
        load_config(path)

    error = caught.value
    assert isinstance(error, CliError)
    assert error.code == "CLI_CONFIG_INVALID"
    assert error.path == path
    assert str(error).startswith(f"{path}: ")
    assert fragment in str(error)
    assert len(str(error)) < 400


def test_a_custom_provider_may_be_named_in_default_model_and_models(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            'default_model = "box/m"\n[providers.box]\nbase_url = "https://box"\n'
            '[models."box/m"]\ncontext_window = 1\n',
        )
    )

    assert config.default_model == "box/m"
    assert config.models["box/m"].context_window == 1


def test_a_file_that_is_too_big_or_not_utf8_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (config_module.MAX_CONFIG_BYTES + 1))
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"default_model = '\xff'\n")

    with pytest.raises(CliConfigError, match="larger than"):
        load_config(big)
    with pytest.raises(CliConfigError, match="not valid UTF-8"):
        load_config(binary)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_cli_config_unreadable(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    path.chmod(0)
    try:
        with pytest.raises(CliConfigError) as caught:
            load_config(path)
    finally:
        path.chmod(0o600)

    assert caught.value.code == "CLI_CONFIG_UNREADABLE"


def test_a_path_below_a_file_is_cli_config_unreadable(tmp_path: Path) -> None:
    path = write(tmp_path, "") / "config.toml"

    with pytest.raises(CliConfigError) as caught:
        load_config(path)

    assert caught.value.code == "CLI_CONFIG_UNREADABLE"


def test_where_the_config_file_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path.home()
    assert find_config({"TETHER_CONFIG": "/etc/t.toml"}) == Path("/etc/t.toml")
    assert find_config({"TETHER_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path)}) == (
        tmp_path / "tether" / "config.toml"
    )
    relative = find_config({"XDG_CONFIG_HOME": "relative/dir"})  # ignored, as XDG says
    assert relative == home / ".config" / "tether" / "config.toml"
    monkeypatch.setenv("TETHER_CONFIG", str(tmp_path / "from-env.toml"))
    assert find_config() == tmp_path / "from-env.toml"
    assert load_config().path == tmp_path / "from-env.toml"


# --- choosing a model, in process ---------------------------------------------------------------


def test_choose_model_checks_what_it_can_before_any_request(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CONFIG))
    env = {"OPENAI_API_KEY": FAKE_KEY}

    choice = choose_model("openai/gpt-4o-mini", base_url=None, config=config, environ=env)
    assert (choice.provider.name, choice.model) == ("openai", "gpt-4o-mini")
    assert choice.base_url == "https://api.openai.com/v1"
    assert choice.settings.max_output_tokens is None
    routed = choose_model(
        "openrouter/anthropic/claude-x",
        base_url="http://127.0.0.1:1/v1",
        config=config,
        environ={"OPENROUTER_API_KEY": "k"},
    )
    assert (routed.model, routed.base_url) == ("anthropic/claude-x", "http://127.0.0.1:1/v1")
    default = choose_model(None, base_url=None, config=config, environ={"GPU_BOX_TOKEN": "t"})
    assert (default.spec, default.settings.context_window) == ("gpu-box/qwen3-coder", 131072)
    local = choose_model("local-claude/c", base_url=None, config=config, environ={})
    assert local.provider.api == "anthropic-messages"

    cases = [
        ("gpt-4o", "CLI_INVALID_MODEL_SPEC"),
        ("openai/", "CLI_INVALID_MODEL_SPEC"),
        ("/gpt", "CLI_INVALID_MODEL_SPEC"),
        ("nope/x", "CLI_UNKNOWN_PROVIDER"),
        ("anthropic/claude", "CLI_MISSING_API_KEY"),
        ("gpu-box/qwen3-coder", "CLI_MISSING_API_KEY"),
    ]
    for spec, code in cases:
        with pytest.raises(CliError) as caught:
            choose_model(spec, base_url=None, config=config, environ=env)
        assert caught.value.code == code, spec
        assert FAKE_KEY not in str(caught.value)
    with pytest.raises(CliError) as caught:
        choose_model(None, base_url=None, config=load_config(tmp_path / "absent"), environ={})
    assert caught.value.code == "CLI_NO_MODEL"
    assert "default_model" in str(caught.value)


async def test_a_choice_builds_the_model_of_its_api(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            CONFIG + '\n[models."local-claude/c"]\nmax_output_tokens = 1234\n',
        )
    )
    env = {"GPU_BOX_TOKEN": FAKE_KEY, "ANTHROPIC_API_KEY": FAKE_KEY}
    built = [
        choose_model(spec, base_url=None, config=config, environ=env).build()
        for spec in ("gpu-box/qwen3-coder", "local-claude/c", "anthropic/claude-x", "ollama/q")
    ]
    try:
        names = [type(model).__name__ for model in built]
        assert names == ["OpenAIChatModel", "AnthropicModel", "AnthropicModel", "OpenAIChatModel"]
        first = built[0]
        assert isinstance(first, OpenAIChatModel)
        assert first.base_url == "http://user:secret@gpu-box:8000/v1"
        assert all(FAKE_KEY not in repr(model) for model in built)
    finally:
        for model in built:
            await model.aclose()


def test_display_url_hides_user_and_password() -> None:
    assert display_url("http://user:pw@host:1/v1") == "http://***@host:1/v1"
    assert display_url("https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert display_url("http://[::1") == "http://[::1"  # unparsable: shown as it is


# --- the advice for a failed run, in process ----------------------------------------------------


def failed(message: str) -> FailedRunResult:
    return FailedRunResult(
        messages=(UserMessage(id="u1", content="hi"),),
        error=RunError(code="MODEL_STREAM_FAILED", message=message),
    )


def openai_choice(tmp_path: Path, spec: str = "openai/gpt-4o") -> ModelChoice:
    config = load_config(write(tmp_path, CONFIG))
    env = {"OPENAI_API_KEY": "k", "GPU_BOX_TOKEN": "t"}
    return choose_model(spec, base_url=None, config=config, environ=env)


def test_run_problem_maps_each_provider_code_to_advice(tmp_path: Path) -> None:
    choice = openai_choice(tmp_path)
    box = openai_choice(tmp_path, "gpu-box/qwen3-coder")
    local = openai_choice(tmp_path, "ollama/qwen3")
    limited = ProviderError("PROVIDER_RATE_LIMITED", "HTTP 429: slow", status=429, retry_after=2.5)
    forbidden = ProviderError("PROVIDER_AUTH_FAILED", "HTTP 403: no", status=403)

    def advice(
        message: str, error: ProviderError | None = None, which: ModelChoice = choice
    ) -> CliError | None:
        return run_problem(failed(message), error, which)

    unreachable = advice("PROVIDER_CONNECTION_FAILED: Could not connect: refused")
    assert unreachable is not None
    assert unreachable.code == "CLI_SERVER_UNREACHABLE"
    assert "https://api.openai.com/v1" in str(unreachable)
    box_down = advice("PROVIDER_TIMEOUT: Connecting timed out: x", which=box)
    assert box_down is not None
    assert box_down.code == "CLI_SERVER_UNREACHABLE"
    assert "secret" not in str(box_down)
    assert advice("PROVIDER_TIMEOUT: No response within 600 s") is None

    auth = advice("PROVIDER_AUTH_FAILED: HTTP 401: bad key")
    assert auth is not None
    assert (auth.code, "OPENAI_API_KEY" in str(auth)) == ("CLI_AUTH_FAILED", True)
    no_access = advice("PROVIDER_AUTH_FAILED: HTTP 403: no", forbidden)
    assert no_access is not None
    assert "HTTP 403" in str(no_access)
    assert "'gpt-4o'" in str(no_access)
    keyless = advice("PROVIDER_AUTH_FAILED: HTTP 401: who", which=local)
    assert keyless is not None
    assert "sends no API key" in str(keyless)

    rate = advice("PROVIDER_RATE_LIMITED: HTTP 429: slow", limited)
    assert rate is not None
    assert (rate.code, "retry after 2.5 s" in str(rate)) == ("CLI_RATE_LIMITED", True)
    unknown_delay = advice("PROVIDER_RATE_LIMITED: HTTP 429: slow", forbidden)  # other error
    assert unknown_delay is not None
    assert "named no delay" in str(unknown_delay)

    overflow = advice("PROVIDER_CONTEXT_OVERFLOW: HTTP 400: too long")
    assert overflow is not None
    assert overflow.code == "CLI_CONTEXT_OVERFLOW"
    assert "/compact" in str(overflow)

    assert advice("PROVIDER_SERVER_ERROR: HTTP 500: oops") is None
    assert advice("The model stream failed") is None
    cancelled = CancelledRunResult(messages=(UserMessage(id="u1", content="hi"),), reason="x")
    assert run_problem(cancelled, None, choice) is None


# --- lists the CLI spells out -------------------------------------------------------------------


def test_the_cli_lists_match_the_runtime(tmp_path: Path) -> None:
    from tether import RunLimits
    from tether.loop import MAX_AGENT_STEPS
    from tether.providers.catalog import PRESETS
    from tether.tools.coding import coding_tools

    assert coding_tools(tmp_path).names == APPROVABLE_TOOLS
    assert set(DEFAULT_APPROVE) <= set(APPROVABLE_TOOLS)
    assert parser_module.FIXTURE_MAX_STEPS == MAX_AGENT_STEPS
    assert RunLimits.for_real_models().max_steps == parser_module.MODEL_MAX_STEPS
    assert "tether models" in parser_module.MODEL_HELP  # which lists the presets
    for name in ("openai", "anthropic", "ollama"):  # the examples it names
        assert name in PRESETS
        assert f"{name}/" in parser_module.MODEL_HELP


def test_importing_the_cli_entry_point_stays_light() -> None:
    code = (
        "import sys, tether.cli.main; "
        "heavy = [m for m in ('tether.protocol', 'tether.providers.catalog', 'httpx2', "
        "'asyncio', 'tether.cli.run_command') if m in sys.modules]; print(heavy)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )

    assert completed.stdout.strip() == "[]"


# --- tool processes and provider keys (issue 25) ----------------------------------------------


def test_tools_pass_env_is_read_checked_and_carried_by_the_choice(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CONFIG + 'pass_env = ["OPENAI_API_KEY", "MY_VAR"]\n'))
    assert config.tools.pass_env == ("OPENAI_API_KEY", "MY_VAR")
    assert load_config(write(tmp_path, "")).tools.pass_env == ()
    for bad in ('"OPENAI_API_KEY"', '["not a name"]', "[1]", f'["{FAKE_KEY}"]'):
        with pytest.raises(CliConfigError) as info:
            load_config(write(tmp_path, f"[tools]\npass_env = {bad}\n"))
        assert "'tools.pass_env'" in str(info.value)
        assert FAKE_KEY not in str(info.value)
    choice = choose_model(
        "openai/gpt-4o-mini", base_url=None, config=config, environ={"OPENAI_API_KEY": FAKE_KEY}
    )
    assert choice.pass_env == ("OPENAI_API_KEY", "MY_VAR")
    # every key variable the catalog and the config know, the active model's included
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GPU_BOX_TOKEN"} <= set(choice.hidden_env)


async def test_run_and_rpc_tools_hide_the_key_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether import AbortController, JsonObject, ScriptedModel, ToolCall
    from tether.cli.run_command import PrintOptions
    from tether.cli.session_config import mode_config
    from tether.coding import CodingSession
    from tether.tools.execution import execute_tool_call

    monkeypatch.setenv("GPU_BOX_TOKEN", FAKE_KEY)
    monkeypatch.setenv("MY_VAR", "passed")
    config = load_config(write(tmp_path, CONFIG + 'pass_env = ["MY_VAR"]\n'))
    choice = choose_model(None, base_url=None, config=config, environ={"GPU_BOX_TOKEN": FAKE_KEY})
    options = PrintOptions(prompt="hi", tools="coding", max_steps=4)
    coding = mode_config(options, choice, config, where=(tmp_path, None))

    def scripted(_: object) -> ScriptedModel:
        return ScriptedModel([])

    session = CodingSession(dataclasses.replace(coding, build_model=scripted))
    try:
        await session.start()
        runtime = session.runtime
        assert runtime is not None
        command = JsonObject({"command": 'echo "[${GPU_BOX_TOKEN-}][${MY_VAR-}]"'})
        call = ToolCall(id="c1", name="bash", arguments=command)
        result = await execute_tool_call(runtime.tools, call, AbortController().signal)
    finally:
        await session.close()
    assert "--- stdout ---\n[][passed]\n" in result.content


# --- prices (the session's cost totals) ---------------------------------------------------------

_PRICE_TEXTS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-5, 10**10).map(str),
    st.sampled_from(['"0.1"', "true", "[1]", "-0.0", "1e9", "999999999.0", "inf", "-inf", "nan"]),
)


_PRICE_KEYS = {
    "input_price": "input_price",
    "output_price": "output_price",
    "cache_read_price": "cache_read_price",
    "cache_write_price": "cache_write_price",
    "input_cost": "input_price",  # the older names
    "output_cost": "output_price",
}


@given(_PRICE_TEXTS, st.sampled_from(sorted(_PRICE_KEYS)))
def test_a_price_is_a_number_from_0_below_a_billion_or_a_coded_error(text: str, key: str) -> None:
    import math
    import tempfile
    import tomllib

    source = f'[models."openai/gpt-4o-mini"]\n{key} = {text}\n'
    try:
        value: object = tomllib.loads(source)["models"]["openai/gpt-4o-mini"][key]
    except tomllib.TOMLDecodeError:
        return
    with tempfile.TemporaryDirectory() as directory:
        path = write(Path(directory), source)
        valid = (
            type(value) in (int, float)
            and not math.isnan(cast(float, value))
            and 0 <= cast(float, value) < 1e9
        )
        if valid:
            settings = load_config(path).models["openai/gpt-4o-mini"]
            assert getattr(settings, _PRICE_KEYS[key]) == float(cast(float, value))
        else:
            with pytest.raises(CliConfigError) as caught:
                load_config(path)
            assert caught.value.code == "CLI_CONFIG_INVALID"
            assert key in str(caught.value)


def test_a_choice_prices_its_usage(tmp_path: Path) -> None:
    from tether.protocol import ModelUsage

    text = (
        '[models."openai/gpt-4o-mini"]\ninput_cost = 2\noutput_cost = 10\n'
        '[models."openai/gpt-other"]\ninput_price = 2\noutput_price = 10\n'
        '[models."openai/gpt-cached"]\ninput_price = 2\noutput_price = 10\n'
        "cache_read_price = 0.5\ncache_write_price = 2.5\ncontext_window = 1000\n"
    )
    config = load_config(write(tmp_path, text))
    env = {"OPENAI_API_KEY": FAKE_KEY}
    usage = ModelUsage(input_tokens=500_000, output_tokens=100_000, cache_read_tokens=500_000)

    def choice(spec: str) -> ModelChoice:
        return choose_model(spec, base_url=None, config=config, environ=env)

    # the config's prices win one by one; the catalog's cached-input price stays ($0.075)
    priced = choice("openai/gpt-4o-mini")
    assert priced.settings.input_price == 2
    assert priced.cost(usage) == pytest.approx(1.0 + 1.0 + 0.0375)
    assert priced.context_window == 128_000  # the catalog's
    # a model the catalog does not know: cached tokens without a price are an unknown cost
    other = choice("openai/gpt-other")
    assert other.cost(usage) is None
    assert other.cost(ModelUsage(input_tokens=500_000, output_tokens=0)) == 1.0
    cached = choice("openai/gpt-cached")
    assert cached.cost(usage) == pytest.approx(1.0 + 1.0 + 0.25)
    assert cached.context_window == 1000
    assert choice("openai/gpt-unknown").cost(usage) is None


def test_a_price_and_its_older_name_together_are_a_coded_error(tmp_path: Path) -> None:
    text = '[models."openai/gpt-4o-mini"]\ninput_price = 2\ninput_cost = 2\n'
    with pytest.raises(CliConfigError) as caught:
        load_config(write(tmp_path, text))
    assert caught.value.code == "CLI_CONFIG_INVALID"
    assert "input_cost' is the older name of" in str(caught.value)


# --- the sandbox setting (issue 35) -----------------------------------------------------------


def test_tools_sandbox_settings_are_read_and_checked(tmp_path: Path) -> None:
    text = (
        '[tools]\nsandbox = "auto"\nsandbox_network = true\n'
        'sandbox_hide = ["~/secrets", "/srv/keys"]\n'
    )
    tools = load_config(write(tmp_path, text)).tools
    assert (tools.sandbox, tools.sandbox_network) == ("auto", True)
    assert tools.sandbox_hide == ("~/secrets", "/srv/keys")
    defaults = load_config(write(tmp_path, "")).tools
    assert (defaults.sandbox, defaults.sandbox_network, defaults.sandbox_hide) == ("off", False, ())
    for bad, key in (
        ('sandbox = "sometimes"', "'tools.sandbox'"),
        ("sandbox = true", "'tools.sandbox'"),
        ('sandbox_network = "yes"', "'tools.sandbox_network'"),
        ('sandbox_hide = ["relative/path"]', "'tools.sandbox_hide'"),
        ('sandbox_hide = "~/x"', "'tools.sandbox_hide'"),
    ):
        with pytest.raises(CliConfigError) as info:
            load_config(write(tmp_path, f"[tools]\n{bad}\n"))
        assert key in str(info.value)


def test_the_config_knows_every_sandbox_mode() -> None:
    from typing import get_args

    from tether.cli.config_reader import SANDBOX_MODES
    from tether.tools.coding.sandbox import SandboxMode

    assert get_args(SandboxMode) == SANDBOX_MODES


async def test_the_session_key_goes_only_to_an_api_that_takes_one(tmp_path: Path) -> None:
    """Issue 33: ``ModelChoice.build(cache_key=...)`` gives OpenAI Chat models their
    ``prompt_cache_key``; Anthropic's API has no such option (its caching needs no key)."""
    config = load_config(tmp_path / "missing.toml")
    env = {"OPENAI_API_KEY": FAKE_KEY, "ANTHROPIC_API_KEY": FAKE_KEY}
    openai = choose_model("openai/gpt-4o", base_url=None, config=config, environ=env)
    anthropic = choose_model(
        "anthropic/claude-sonnet-4-5", base_url=None, config=config, environ=env
    )
    built = openai.build(cache_key="tether-abc")
    claude = anthropic.build(cache_key="tether-abc")
    try:
        assert isinstance(built, OpenAIChatModel)
        assert built._prompt_cache_key == "tether-abc"  # pyright: ignore[reportPrivateUsage]
        assert anthropic.context_window == 200_000
        assert anthropic.prices.cache_read == 0.3
    finally:
        await built.aclose()
        await claude.aclose()


# --- the catalog in tether models ---------------------------------------------------------------

PRICED_CONFIG = """\
[models."openai/gpt-4o-mini"]
input_price = 0.2

[models."gpu-box/qwen3-coder"]
context_window = 131072
output_price = 1.5

[providers.gpu-box]
base_url = "http://gpu-box:8000/v1"
"""


def _models_output(tmp_path: Path, *, as_json: bool) -> str:
    import io

    from tether.cli.models import models_command
    from tether.cli.render import Output

    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    config = load_config(write(tmp_path, PRICED_CONFIG))
    assert models_command(config, Output.for_json(stream), as_json=as_json, environ={}) == 0
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8")


def test_models_lists_the_catalog_with_its_prices_and_the_configs_over_them(
    tmp_path: Path,
) -> None:
    from tether.providers.model_catalog import MODEL_CATALOG

    rows = json_rows(_models_output(tmp_path, as_json=True))
    known = {row["spec"]: row for row in rows if row["type"] == "catalogModel"}
    # every catalog model, then the configured ones it does not know
    assert list(known)[: len(MODEL_CATALOG)] == list(MODEL_CATALOG)
    sonnet = known["anthropic/claude-sonnet-4-5"]
    assert sonnet == {
        "type": "catalogModel",
        "spec": "anthropic/claude-sonnet-4-5",
        "contextWindow": 200_000,
        "maxOutputTokens": 64_000,
        "prices": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "images": True,
        "thinking": True,
        "source": "catalog",
    }
    mini = known["openai/gpt-4o-mini"]
    assert mini["prices"] == {"input": 0.2, "output": 0.6, "cacheRead": 0.075, "cacheWrite": 0.15}
    assert mini["source"] == "catalog+config"
    custom = known["gpu-box/qwen3-coder"]
    assert custom["prices"] == {"input": None, "output": 1.5, "cacheRead": None, "cacheWrite": None}
    assert (custom["contextWindow"], custom["images"], custom["source"]) == (
        131072,
        False,
        "config",
    )

    text = _models_output(tmp_path, as_json=False)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("MODEL"))
    assert header.split() == [
        "MODEL", "CONTEXT", "MAX", "OUT", "INPUT", "OUTPUT", "CACHE", "R", "CACHE", "W", "CAN",
    ]  # fmt: skip
    row = {line.split()[0]: line.split()[1:] for line in lines[lines.index(header) + 1 :] if line}
    assert row["anthropic/claude-sonnet-4-5"] == [
        "200k", "64k", "$3", "$15", "$0.30", "$3.75", "images,thinking",
    ]  # fmt: skip
    assert row["openai/gpt-4o-mini"][2] == "$0.20"  # the config's price
    assert row["gpu-box/qwen3-coder"] == ["131k", "?", "?", "$1.50", "?", "?", "-"]
    assert "USD per million tokens; ? = not known" in text
