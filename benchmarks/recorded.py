"""The recorded vendor streams, read from the workshop's shared folder (never copied here).

The folder is ``recorded/`` in ``$TETHER_SHARED_DIR``, else in the folder named ``shared``
beside the repository (as the tests find it). A benchmark that needs them reports its goal as
SKIPPED, naming the folder, when they are missing.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent


def folder() -> Path:
    """Where the recordings are looked for."""
    configured = os.environ.get("TETHER_SHARED_DIR")
    shared = Path(configured) if configured else REPOSITORY.parent / "shared"
    return shared / "recorded"


def bodies(api: str) -> dict[str, bytes]:
    """Every recorded response body of ``api`` (``"openai-chat"``, ``"anthropic-messages"``),
    by file name, sorted; empty when the folder is missing."""
    where = folder()
    if not where.is_dir():
        return {}
    found: dict[str, bytes] = {}
    for path in sorted(where.glob("*.json")):
        recording = json.loads(path.read_text(encoding="utf-8"))
        if recording.get("api") == api and recording.get("status") == 200:
            found[path.stem] = recording["body"].encode()
    return found


def missing(api: str) -> str:
    """Why a goal on ``api``'s recordings was skipped."""
    return f"no {api} recordings in {folder()} (set TETHER_SHARED_DIR to the shared folder)"


def payload_loader() -> Callable[[str], Any]:
    """How the tether under test parses an event's payload: its providers' ``loads_payload``,
    or ``json.loads`` in a tether that has none (a "before" tree)."""
    try:
        module: Any = importlib.import_module("tether.providers._streaming")
        return module.loads_payload
    except (ImportError, AttributeError):
        return json.loads
