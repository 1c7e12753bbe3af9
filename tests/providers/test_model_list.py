"""``list_models``: the models a server offers, over a real loopback socket.

Both HTTP models ask ``GET /models`` (Anthropic: ``/v1/models``, paged with ``has_more`` and
``after_id``) with the key in its header only; the page parser takes vendor data: unknown
fields ignored, what it reads typed and bounded, anything else ``PROVIDER_PROTOCOL_ERROR``.
"""

from __future__ import annotations

import asyncio
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli_support import BOUND, FAKE_KEY, TETHER, assert_quiet, child_env, run_tether
from servers.katan import free_port
from servers.replay import ReplayServer, json_response, redirect_response
from tether.abort import AbortController, AbortError
from tether.providers._http import RetryPolicy
from tether.providers.anthropic import AnthropicModel
from tether.providers.errors import ProviderError
from tether.providers.model_list import MAX_MODEL_ID_LENGTH, parse_model_page
from tether.providers.openai_chat import OpenAIChatModel

NO_RETRY = RetryPolicy(attempts=1)


async def test_openai_lists_the_servers_models_with_the_key_in_its_header() -> None:
    async with ReplayServer() as server:
        server.respond(
            json_response(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": "gpt-test", "object": "model", "owned_by": "x"},
                        {"id": "qwen3:8b", "created": 1},
                    ],
                },
            )
        )
        async with OpenAIChatModel("any", base_url=server.url, api_key=FAKE_KEY) as model:
            assert await model.list_models() == ("gpt-test", "qwen3:8b")
        (request,) = server.requests
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert request.body == b""


async def test_anthropic_follows_every_page() -> None:
    async with ReplayServer(base_path="") as server:
        first = [{"id": "claude-a", "type": "model", "display_name": "A"}]
        server.respond(json_response(200, {"data": first, "has_more": True, "last_id": "a b"}))
        server.respond(json_response(200, {"data": [{"id": "claude-b"}], "has_more": False}))
        async with AnthropicModel("any", base_url=server.url, api_key=FAKE_KEY) as model:
            assert await model.list_models() == ("claude-a", "claude-b")
        paths = [request.path for request in server.requests]
        keys = {request.headers["x-api-key"] for request in server.requests}
    assert paths == ["/v1/models?limit=1000", "/v1/models?limit=1000&after_id=a%20b"]
    assert keys == {FAKE_KEY}


async def test_a_server_without_the_endpoint_is_a_bad_request_without_the_key() -> None:
    async with ReplayServer() as server:
        server.respond(json_response(404, {"error": {"message": f"no route {FAKE_KEY}"}}))
        async with OpenAIChatModel(
            "any", base_url=server.url, api_key=FAKE_KEY, retry=NO_RETRY
        ) as model:
            with pytest.raises(ProviderError) as caught:
                await model.list_models()
    assert caught.value.code == "PROVIDER_BAD_REQUEST"
    assert FAKE_KEY not in str(caught.value)


async def test_a_listing_is_never_redirected() -> None:
    async with ReplayServer() as server:
        server.respond(redirect_response(307, "http://127.0.0.1:9/elsewhere"))
        async with OpenAIChatModel("any", base_url=server.url, api_key=FAKE_KEY) as model:
            with pytest.raises(ProviderError) as caught:
                await model.list_models()
    assert caught.value.code == "PROVIDER_REDIRECTED"


async def test_an_aborted_listing_raises_the_reason() -> None:
    async with ReplayServer() as server:
        script = server.respond(json_response(200, {"data": []}, stall_after=0))
        controller = AbortController()
        async with OpenAIChatModel("any", base_url=server.url, api_key=None) as model:
            listing = model.list_models(controller.signal)
            task = asyncio.ensure_future(listing)
            await server.wait_for_requests(1)
            controller.abort(AbortError("stop listing"))
            with pytest.raises(AbortError, match="stop listing"):
                await task
        script.release.set()


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"data": {}},
        {"data": [1]},
        {"data": [{"id": 3}]},
        {"data": [{"id": ""}]},
        {"data": [{"id": "x" * (MAX_MODEL_ID_LENGTH + 1)}]},
        {"data": [], "has_more": True},
        {"data": [], "has_more": True, "last_id": 7},
    ],
)
def test_a_page_that_breaks_the_shape_is_a_protocol_error(body: Any) -> None:
    with pytest.raises(ProviderError) as caught:
        parse_model_page(body)
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def page_or_error(body: object) -> tuple[tuple[str, ...], str | None] | ProviderError:
    try:
        return parse_model_page(body)
    except ProviderError as error:
        return error


@given(json_values)
def test_any_json_is_a_page_or_a_protocol_error(body: object) -> None:
    outcome = page_or_error(body)
    if isinstance(outcome, ProviderError):
        assert outcome.code == "PROVIDER_PROTOCOL_ERROR"
    else:
        ids, after = outcome
        assert all(type(ident) is str and ident for ident in ids)
        assert after is None or (type(after) is str and after)


@given(
    st.lists(st.text(min_size=1, max_size=20), max_size=30),
    st.dictionaries(st.text(max_size=5), json_values, max_size=3),
)
def test_ids_come_back_in_order_whatever_else_an_entry_holds(
    ids: list[str], extra: dict[str, object]
) -> None:
    page = {"data": [{**extra, "id": ident} for ident in ids], "object": "list"}
    assert parse_model_page(page) == (tuple(ids), None)


# --- tether models PROVIDER, as a subprocess ---------------------------------------------------


async def test_tether_models_provider_lists_the_servers_models(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(json_response(200, {"data": [{"id": "qwen3:8b"}, {"id": "llama3"}]}))
        server.respond(json_response(200, {"data": [{"id": "qwen3:8b"}]}))
        env = child_env(tmp_path)
        human = await run_tether("models", "openai", "--base-url", server.url, env=env)
        machine = await run_tether("models", "openai", "--base-url", server.url, "--json", env=env)
        keys = [request.headers["authorization"] for request in server.requests]
    assert human.returncode == 0, human.err
    assert human.out.splitlines() == [
        f"models at {server.url} (provider openai):",
        "  openai/qwen3:8b",
        "  openai/llama3",
    ]
    assert machine.events() == [{"type": "model", "provider": "openai", "id": "qwen3:8b"}]
    assert keys == [f"Bearer {FAKE_KEY}"] * 2
    assert_quiet(human.stderr + machine.stderr)


async def test_tether_models_provider_says_what_went_wrong(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    async with ReplayServer() as server:
        server.respond(json_response(401, {"error": {"message": "bad key"}}))
        refused = await run_tether("models", "openai", "--base-url", server.url, env=env)
    missing = await run_tether("models", "anthropic", env=env)
    unknown = await run_tether("models", "nope", env=env)
    unreachable = await run_tether(
        "models", "openai", "--base-url", f"http://127.0.0.1:{free_port()}/v1", env=env
    )
    assert (refused.returncode, refused.err.split("]")[0]) == (2, "tether models: [CLI_AUTH_FAILED")
    assert "OPENAI_API_KEY" in refused.err
    assert missing.returncode == 2
    assert "[CLI_MISSING_API_KEY]" in missing.err
    assert "ANTHROPIC_API_KEY" in missing.err
    assert "[CLI_UNKNOWN_PROVIDER]" in unknown.err
    assert "[CLI_SERVER_UNREACHABLE]" in unreachable.err
    for completed in (refused, missing, unknown, unreachable):
        assert completed.stdout == b""
        assert_quiet(completed.stderr)


def test_tether_version_names_the_installed_distribution(tmp_path: Path) -> None:
    completed = subprocess.run(
        [str(TETHER), "--version"],
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=False,
    )
    assert (completed.returncode, completed.stdout) == (0, f"tether {version('tether')}\n")
