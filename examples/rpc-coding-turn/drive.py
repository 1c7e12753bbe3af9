"""Drive one whole coding turn through ``tether rpc``, approving the tool calls it asks about.

    python examples/rpc-coding-turn/drive.py --model openai/gpt-4o-mini [--base-url URL] \
        [--prompt TEXT] [--deny] [WORKSPACE]

It starts ``tether rpc --tools coding`` in WORKSPACE (default: the current directory) with
the typed client of ``tether.coding.rpc_client``, sends the prompt, answers every
``approval_request`` (``yes``, or ``no`` with ``--deny``), prints what happened, and ends
the input; its exit status is the server's (0). The session is kept in tether's sessions
directory: ``tether chat -r ID`` (or ``tether rpc -r ID``) goes on with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Literal

from tether.coding.rpc_client import (
    RpcAdvice,
    RpcApprovalRequest,
    RpcClient,
    RpcEvent,
    RpcNotice,
)

DEFAULT_PROMPT = "Create hello.txt containing one line: Hello from tether."


async def drive(arguments: argparse.Namespace) -> int:
    options = ["--model", arguments.model, "--tools", "coding"]
    if arguments.base_url:
        options += ["--base-url", arguments.base_url]
    client = await RpcClient.start(*options, cwd=arguments.workspace)
    async with client:
        state = await client.get_state()
        print(f"protocol {state.protocol_version} · {state.model}")

        async def approve(request: RpcApprovalRequest) -> Literal["yes", "no", "always"]:
            answer: Literal["yes", "no"] = "no" if arguments.deny else "yes"
            print(f"approval: {request.name}({json.dumps(request.arguments)}) -> {answer}")
            return answer

        lines = await client.run(arguments.prompt, approve)
        for line in lines:
            if isinstance(line, RpcEvent) and line.type == "tool.finished":
                result = line.event["payload"]["message"]
                mark = "error" if result["isError"] else "ok"
                print(f"tool {result['toolName']}: {mark}")
            elif isinstance(line, RpcAdvice):
                print(f"advice [{line.code}] {line.message}")
            elif isinstance(line, RpcNotice):
                print(f"notice: {line.text}")
        finished = lines[-1]
        assert isinstance(finished, RpcEvent)
        result = finished.event["payload"]["result"]
        print(f"status: {result['status']}")
        print(f"assistant: {result.get('finalText') or ''}")
        tree = await client.get_tree()
        state = await client.get_state()
        print(f"session {state.session_id}: {len(tree['entries'])} entries")
    return await client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description="Drive one coding turn through tether rpc.")
    parser.add_argument("--model", required=True, metavar="PROVIDER/MODEL")
    parser.add_argument("--base-url", metavar="URL")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--deny", action="store_true", help="answer every approval no")
    parser.add_argument("workspace", nargs="?", default=".")
    return asyncio.run(drive(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
