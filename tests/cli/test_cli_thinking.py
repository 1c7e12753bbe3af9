"""The thinking level on the command line: ``thinking`` in ``config.toml`` (top level and per
``[models."PROVIDER/MODEL"]``), ``--thinking LEVEL`` on chat/run/rpc, and the model each
choice builds."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.cli.config import CliConfigError, load_config, with_thinking_flag
from tether.cli.models import choose_model
from tether.cli.parser import build_parser
from tether.providers.anthropic import AnthropicModel
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.thinking import THINKING_LEVELS

ENV = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_level_is_read_globally_and_per_model(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            'thinking = "low"\n[models."anthropic/claude-sonnet-4-5"]\nthinking = "high"\n',
        )
    )
    assert config.thinking == "low"
    assert config.models["anthropic/claude-sonnet-4-5"].thinking == "high"
    claude = choose_model("anthropic/claude-sonnet-4-5", base_url=None, config=config, environ=ENV)
    other = choose_model("openai/gpt-5", base_url=None, config=config, environ=ENV)
    assert (claude.thinking, other.thinking) == ("high", "low")
    built = claude.build()
    assert isinstance(built, AnthropicModel)
    assert built.thinking == "high"
    plain = choose_model(
        "openai/gpt-5", base_url=None, config=load_config(tmp_path / "none.toml"), environ=ENV
    )
    assert plain.thinking is None
    model = plain.build()
    assert isinstance(model, OpenAIChatModel)
    assert model.thinking is None


@given(st.sampled_from(['"max"', '"HIGH"', '""', "3", "true", '["low"]', '"off "']))
def test_a_level_that_is_not_one_is_a_coded_error_naming_the_key(text: str) -> None:
    import tempfile

    for source, key in (
        (f"thinking = {text}\n", "'thinking'"),
        (f'[models."openai/gpt-5"]\nthinking = {text}\n', "'models.\"openai/gpt-5\".thinking'"),
    ):
        with tempfile.TemporaryDirectory() as directory:
            path = write(Path(directory), source)
            with pytest.raises(CliConfigError) as caught:
                load_config(path)
        assert caught.value.code == "CLI_CONFIG_INVALID"
        message = str(caught.value)
        assert key in message
        assert "off, minimal, low, medium, high" in message


@given(st.sampled_from(THINKING_LEVELS))
def test_every_level_is_accepted(level: str) -> None:
    assert tomllib.loads(f'thinking = "{level}"')  # the source is valid TOML
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        assert load_config(write(Path(directory), f'thinking = "{level}"\n')).thinking == level


@pytest.mark.parametrize("command", ["chat", "run", "rpc"])
def test_the_flag_is_on_every_model_command_and_beats_the_config(
    command: str, tmp_path: Path
) -> None:
    parser, _ = build_parser()
    extra = ["-p", "hi"] if command == "run" else []
    args = parser.parse_args([command, "--thinking", "minimal", *extra])
    assert args.thinking == "minimal"
    config = load_config(
        write(tmp_path, 'thinking = "low"\n[models."openai/gpt-5"]\nthinking = "high"\n')
    )
    flagged = with_thinking_flag(config, args.thinking)
    choice = choose_model("openai/gpt-5", base_url=None, config=flagged, environ=ENV)
    assert choice.thinking == "minimal"
    assert with_thinking_flag(config, None) is config
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--thinking", "max", *extra])


# --- tether rpc: --thinking, set_thinking, get_state ---------------------------------------------


@pytest.mark.slow
async def test_rpc_sets_the_level_and_the_next_request_carries_it(tmp_path: Path) -> None:
    from cli_support import child_env
    from rpc_support import is_event, rpc, text_reply
    from servers.replay import ReplayServer

    async with (
        ReplayServer() as server,
        rpc(
            "--model",
            "openai/gpt-5",
            "--base-url",
            server.url,
            "--thinking",
            "low",
            env=child_env(tmp_path),
        ) as session,
    ):
        assert (await session.ok({"id": 1, "type": "get_state"}))["thinking"] == "low"
        server.respond(text_reply("one"))
        await session.ok({"id": 2, "type": "prompt", "message": "hi"})
        await session.until(is_event("run.finished"))
        assert await session.ok({"id": 3, "type": "set_thinking", "level": "off"}) == {
            "thinking": "off"
        }
        notices = [line["text"] for line in session.lines if line["type"] == "notice"]
        assert notices == ["thinking: gpt-5 has no 'off' level; using 'minimal'"]
        server.respond(text_reply("two"))
        await session.ok({"id": 4, "type": "prompt", "message": "again"})
        await session.until(is_event("run.finished"))
        # the session's level goes on with the next model: gpt-5.1 has "none"
        await session.ok({"id": 5, "type": "set_model", "model": "openai/gpt-5.1"})
        server.respond(text_reply("three"))
        await session.ok({"id": 6, "type": "prompt", "message": "and now"})
        await session.until(is_event("run.finished"))
        refused = await session.refused({"id": 7, "type": "set_thinking", "level": "max"}, 7)
        assert refused["code"] == "RPC_INVALID_REQUEST"
        assert "off, minimal, low, medium, high" in refused["message"]
        status, _ = await session.finish()
    assert status == 0
    efforts = [request.json["reasoning_effort"] for request in server.requests]
    assert efforts == ["low", "minimal", "none"]


@pytest.mark.slow
async def test_run_sends_the_flag_s_level_and_says_the_clamp_on_stderr(tmp_path: Path) -> None:
    import cli_support
    from servers.replay import ReplayServer

    config = tmp_path / "config.toml"
    config.write_text('[models."openai/gpt-5"]\nthinking = "high"\n', encoding="utf-8")
    env = cli_support.child_env(tmp_path, TETHER_CONFIG=str(config))
    async with ReplayServer() as server:
        for _ in range(2):
            server.respond(cli_support.text_reply("ok", prompt_tokens=3))
        flagged = await cli_support.run_tether(
            "run",
            "--model",
            "openai/gpt-5",
            "--base-url",
            server.url,
            "--thinking",
            "off",
            "-p",
            "hi",
            env=env,
        )
        configured = await cli_support.run_tether(
            "run", "--model", "openai/gpt-5", "--base-url", server.url, "-p", "hi", env=env
        )
    assert flagged.returncode == 0, flagged.err
    assert "thinking: gpt-5 has no 'off' level; using 'minimal'" in flagged.err
    assert configured.returncode == 0, configured.err
    assert configured.stderr == b""
    efforts = [request.json["reasoning_effort"] for request in server.requests]
    assert efforts == ["minimal", "high"]
