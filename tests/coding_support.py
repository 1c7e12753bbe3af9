"""What the coding-session tests share: the fixed date of the system prompt and ``Choice``, a
scripted approval answer."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from tether import ScriptedModel
from tether.models.base import Model
from tether.protocol import ModelUsage

TODAY = datetime.date(2026, 1, 2)


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """A ``ModelSource`` whose ``build`` returns one scripted model."""

    spec: str
    model: ScriptedModel
    context_window: int | None = None
    hidden_env: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()
    price: float | None = None
    cache_keys: list[str | None] = field(default_factory=list[str | None])
    """The ``cache_key`` of every ``build``."""

    def build(self, *, cache_key: str | None = None) -> Model:
        self.cache_keys.append(cache_key)
        return self.model

    def cost(self, usage: ModelUsage) -> float | None:
        return None if self.price is None else self.price * usage.output_tokens
