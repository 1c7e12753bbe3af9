"""The provider registry (``tether.providers.registry``): one ``ApiSpec`` per wire API, from
which the catalog, the config file's ``api`` check, model building and ``tether models``
derive. A test-only third API, registered for one test, shows that adding one needs nothing
else: ``--model`` builds it, the config file accepts it, the errors list it, and it is gone
once the test is done."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.abort import AbortSignal
from tether.cli.config import CliConfig, CliConfigError, ModelSettings, load_config
from tether.cli.main import main
from tether.cli.models import choose_model, models_command, remote_models_command
from tether.cli.render import Output
from tether.models.base import ModelStream
from tether.models.scripted import ScriptedModel, text_reply
from tether.protocol import ModelRequest
from tether.providers.catalog import PRESETS, model_from_spec, parse_model_spec
from tether.providers.registry import (
    BUILT_IN_APIS,
    REGISTRY,
    ApiRegistry,
    ApiSpec,
    ProviderPreset,
)


class FakeModel:
    """A tiny model class for the fake API: it records its constructor arguments and answers
    every turn with the same text."""

    def __init__(self, model: str, **options: Any) -> None:
        self.model = model
        self.options = options
        self.closed = False
        self._scripted = ScriptedModel([text_reply(f"fake says hi to {model}")] * 4)

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream:
        return self._scripted.stream(request, signal)

    async def list_models(self, signal: AbortSignal | None = None) -> tuple[str, ...]:
        return ("fake-small", "fake-large")

    async def aclose(self) -> None:
        self.closed = True


def _fake_model_class() -> type[FakeModel]:
    return FakeModel


def _fake_options(preset: ProviderPreset | None) -> Mapping[str, object]:
    return {"flavour": "config server" if preset is None else f"preset {preset.name}"}


FAKE = ApiSpec(
    name="fake",
    summary="a test-only wire API",
    load_model=_fake_model_class,
    base_url_example="http://fake.example/api",
    preset_options=_fake_options,
    presets=(
        ProviderPreset(
            name="fakeapi-preset", base_url="http://127.0.0.1:9/api", api_key_env=None, api="fake"
        ),
    ),
)


@pytest.fixture
def fake_api() -> Generator[ApiSpec]:
    with REGISTRY.registered(FAKE) as spec:
        yield spec
    assert "fake" not in REGISTRY.names()
    assert "fakeapi-preset" not in PRESETS


def _config(tmp_path: Path, text: str) -> CliConfig:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


# --- the built-in registry ----------------------------------------------------------------------


def test_the_built_in_apis_and_their_presets() -> None:
    assert REGISTRY.names() == ("anthropic-messages", "openai-chat", "openai-responses", "gemini")
    assert len(BUILT_IN_APIS) == len(REGISTRY.names())
    assert tuple(PRESETS)[:2] == ("anthropic", "openai")
    for name, preset in PRESETS.items():
        assert preset.name == name
        assert preset.api in REGISTRY.names()
        assert preset in REGISTRY.api(preset.api).presets
    assert sum(len(REGISTRY.api(api).presets) for api in REGISTRY.names()) == len(PRESETS)
    assert REGISTRY.api("anthropic-messages").base_url_example.endswith(".com")
    assert REGISTRY.api("openai-chat").base_url_example.endswith("/v1")
    assert REGISTRY.api("openai-responses").base_url_example.endswith("/v1")
    assert REGISTRY.api("gemini").base_url_example.endswith("googleapis.com")


def test_the_registry_loads_no_http_provider() -> None:
    code = (
        "import json, sys\n"
        "from tether.providers.registry import REGISTRY\n"
        "from tether.cli.config import load_config\n"
        "names = REGISTRY.names(); presets = dict(REGISTRY.presets())\n"
        "heavy = [m for m in ('httpx2', 'tether.providers.openai_chat', "
        "'tether.providers.anthropic', 'tether.providers.openai_responses', "
        "'tether.providers.gemini', 'asyncio') "
        "if m in sys.modules]\n"
        "print(json.dumps({'names': list(names), 'heavy': heavy}))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    report = json.loads(completed.stdout)
    assert report == {
        "names": ["anthropic-messages", "openai-chat", "openai-responses", "gemini"],
        "heavy": [],
    }


def test_a_spec_checks_its_fields() -> None:
    with pytest.raises(ValueError, match=r"ApiSpec\.name"):
        ApiSpec(name="Not OK", summary="", load_model=_fake_model_class, base_url_example="")
    with pytest.raises(ValueError, match="api='fake'"):
        ApiSpec(
            name="fake",
            summary="",
            load_model=_fake_model_class,
            base_url_example="",
            presets=(PRESETS["openai"],),
        )


def test_a_registry_refuses_a_taken_name_and_forgets_what_it_unregisters() -> None:
    registry = ApiRegistry()
    assert registry.names() == ()
    registry.register(FAKE)
    assert registry.names() == ("fake",)
    assert registry.presets()["fakeapi-preset"].api == "fake"
    with pytest.raises(ValueError, match="registered already"):
        registry.register(FAKE)
    other = ApiSpec(
        name="other",
        summary="",
        load_model=_fake_model_class,
        base_url_example="",
        presets=(
            ProviderPreset(
                name="fakeapi-preset", base_url="http://h", api_key_env=None, api="other"
            ),
        ),
    )
    with pytest.raises(ValueError, match="provider 'fakeapi-preset' is registered already"):
        registry.register(other)
    assert registry.names() == ("fake",)  # nothing half-registered
    registry.unregister("fake")
    assert registry.names() == ()
    assert dict(registry.presets()) == {}
    with pytest.raises(KeyError):
        registry.unregister("fake")
    with pytest.raises(ValueError, match="unknown API 'fake'; known APIs: "):
        registry.api("fake")
    with pytest.raises(TypeError):
        registry.register("fake")  # pyright: ignore[reportArgumentType]


def test_a_registration_ends_with_its_block_even_when_the_block_fails() -> None:
    seen: list[tuple[str, ...]] = []

    def fail_inside() -> None:
        with REGISTRY.registered(FAKE):
            seen.append(REGISTRY.names())
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fail_inside()
    assert "fake" in seen[0]
    assert "fake" not in REGISTRY.names()
    assert "fakeapi-preset" not in PRESETS


@given(st.text(max_size=12))
def test_an_api_name_is_lowercase_letters_digits_and_dashes(name: str) -> None:
    valid = bool(name) and name[0] in "abcdefghijklmnopqrstuvwxyz0123456789"
    valid = valid and all(c in "abcdefghijklmnopqrstuvwxyz0123456789-" for c in name)
    try:
        ProviderPreset(name="p", base_url="http://h", api_key_env=None, api=name)
    except ValueError:
        assert not valid
    else:
        assert valid


# --- a third API, registered for the test -------------------------------------------------------


def test_model_from_spec_and_parse_model_spec_know_the_new_api(fake_api: ApiSpec) -> None:
    preset, model = parse_model_spec("fakeapi-preset/x")
    assert (preset.api, model) == ("fake", "x")
    built = model_from_spec("fakeapi-preset/x", extra=1)
    assert isinstance(built, FakeModel)
    assert built.model == "x"
    assert built.options == {
        "flavour": "preset fakeapi-preset",
        "base_url": "http://127.0.0.1:9/api",
        "api_key_env": None,
        "extra": 1,
    }
    with pytest.raises(ValueError, match=r"known providers: .*fakeapi-preset"):
        parse_model_spec("nope/x")


async def test_the_cli_builds_the_new_api_s_model_for_a_preset_and_a_config_server(
    fake_api: ApiSpec, tmp_path: Path
) -> None:
    config = _config(
        tmp_path,
        'default_model = "box/y"\n'
        '[providers.box]\napi = "fake"\nbase_url = "http://box.example:8080/api"\n'
        '[models."fakeapi-preset/x"]\nmax_output_tokens = 77\n',
    )
    assert config.providers["box"].api == "fake"
    preset_choice = choose_model("fakeapi-preset/x", base_url=None, config=config, environ={})
    assert preset_choice.provider.api == "fake"
    assert preset_choice.settings == ModelSettings(max_output_tokens=77)
    built = preset_choice.build()
    assert isinstance(built, FakeModel)
    assert built.options == {
        "flavour": "preset fakeapi-preset",
        "base_url": "http://127.0.0.1:9/api",
        "api_key_env": None,
        "max_output_tokens": 77,
    }
    server = choose_model(None, base_url=None, config=config, environ={}).build()
    assert isinstance(server, FakeModel)
    assert server.model == "y"
    assert server.options == {
        "flavour": "config server",
        "base_url": "http://box.example:8080/api",
        "api_key_env": None,
    }

    out = io.StringIO()
    assert models_command(config, Output.for_json(out), as_json=True, environ={}) == 0
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    apis = {row["name"]: row["api"] for row in rows if row["type"] == "provider"}
    assert apis["fakeapi-preset"] == "fake"
    assert apis["box"] == "fake"
    listing = io.StringIO()
    assert await remote_models_command(preset_choice, Output.for_json(listing), as_json=False) == 0
    assert "fakeapi-preset/fake-small" in listing.getvalue()


def test_tether_run_with_the_new_api_answers(
    fake_api: ApiSpec,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TETHER_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    status = main(["run", "--model", "fakeapi-preset/x", "-p", "hello"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "fake says hi to x" in captured.out


def test_the_config_file_accepts_the_new_api_only_while_it_is_registered(
    tmp_path: Path,
) -> None:
    text = '[providers.box]\napi = "fake"\nbase_url = "http://box.example/api"\n'
    with pytest.raises(CliConfigError) as before:
        _config(tmp_path, text)
    assert "must be one of: anthropic-messages, openai-chat" in str(before.value)
    with REGISTRY.registered(FAKE):
        assert _config(tmp_path, text).providers["box"].api == "fake"
        with pytest.raises(CliConfigError) as listed:
            _config(tmp_path, '[providers.box]\napi = "nope"\nbase_url = "http://h"\n')
        assert (
            "must be one of: anthropic-messages, openai-chat, openai-responses, gemini, fake"
            in str(listed.value)
        )
        with pytest.raises(CliConfigError) as missing:
            _config(tmp_path, '[providers.box]\napi = "fake"\n')
        assert "e.g. http://fake.example/api" in str(missing.value)
        with pytest.raises(CliConfigError, match="built-in provider"):
            _config(tmp_path, '[providers.fakeapi-preset]\nbase_url = "http://h"\n')
        config = _config(tmp_path, 'default_model = "fakeapi-preset/x"\n')
        assert config.default_model == "fakeapi-preset/x"
    with pytest.raises(CliConfigError):
        _config(tmp_path, text)
