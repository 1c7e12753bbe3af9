"""What the session tests share: ``rejects``, expecting a ``SessionStoreError`` with a code."""

from __future__ import annotations

from typing import Any

import pytest

from tether.agent.session import (
    SessionStoreError,
)


async def rejects(code: str, awaitable: Any) -> SessionStoreError:
    with pytest.raises(SessionStoreError) as caught:
        await awaitable
    assert caught.value.code == code, caught.value
    return caught.value
