"""``type_of``: the exact class of a value, typed so pyright does not narrow the value.

tether reads ``type(value)`` (never ``value.__class__``, which an object can fake) at every
boundary. Comparing ``type_of(value) is dict`` keeps ``value`` as declared, which suits code
that inspects untrusted data before it trusts any of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["type_of"]

type_of: Callable[[object], type[Any]] = type
