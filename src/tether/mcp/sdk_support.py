"""What ``tether.mcp.client`` does around the ``mcp`` SDK: importing it off the event loop, the
streamable HTTP transport (a bearer token from the environment), a call result and an error
as text, and waiting for a task to settle. The SDK is imported only inside these functions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncGenerator
from typing import Any, Final

from tether._async.race import wait_out
from tether.mcp.config import McpHttpServer

__all__ = [
    "STDERR_TAIL",
    "describe_error",
    "http_transport",
    "import_sdk",
    "result_text",
    "settle",
]
STDERR_TAIL: Final = 300
"""The most characters of a server's stderr (or an error's first line) a failure quotes."""


async def import_sdk() -> None:
    """Import the SDK (about a second, the first time) on a thread: the event loop (a chat's
    keys, other servers' starts) goes on meanwhile."""
    import importlib
    import sys

    if sys.modules.get("mcp.client.stdio") is None:
        await asyncio.to_thread(importlib.import_module, "mcp.client.stdio")


async def settle(task: asyncio.Future[Any]) -> None:
    """Wait until ``task`` is done, even when the caller is cancelled meanwhile (then the
    cancellation is raised afterwards); its own outcome is retrieved and dropped."""
    cancelled = await wait_out(task)
    if not task.cancelled():
        task.exception()
    if cancelled:
        raise asyncio.CancelledError


@contextlib.asynccontextmanager
async def http_transport(config: McpHttpServer) -> AsyncGenerator[tuple[Any, Any]]:
    """The SDK's streamable HTTP streams to ``config``'s server, with its headers (and
    ``Authorization: Bearer`` from ``bearer_token_env_var`` when that is set)."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = dict(config.headers)
    if config.bearer_token_env_var is not None:
        token = os.environ.get(config.bearer_token_env_var)
        if token:
            headers["Authorization"] = f"Bearer {token}"
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(config.url, http_client=client) as streams,
    ):
        yield streams[0], streams[1]


def describe_error(error: BaseException) -> str:
    """A start failure in a few words (a program not found or not runnable, an OS error,
    else the first line of the error)."""
    if isinstance(error, FileNotFoundError):
        return "the program was not found"
    if isinstance(error, PermissionError):
        return "the program may not be run"
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    text = str(error).strip().splitlines()
    return text[0][:STDERR_TAIL] if text else type(error).__name__


def result_text(result: Any) -> str:
    """A call result as text: text blocks joined by newlines, other blocks described, the
    structured content as JSON when there is no text."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}]".replace(" ]", "]"))
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource {resource.uri}]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)
