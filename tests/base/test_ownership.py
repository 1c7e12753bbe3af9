"""The process-wide iterator-ownership registry (spec 4.A ``claimIteratorOnce``, 4.D, 5.C).

Claims are by identity only: an object's own ``__eq__``/``__hash__`` never matter, objects that
cannot be weakly referenced still work, primitives are never claimable, and the registry
survives ``importlib.reload`` of its module.
"""

from __future__ import annotations

import gc
import importlib
import weakref
from collections.abc import AsyncIterator
from typing import Any

import pytest

import tether._async.ownership as ownership
from tether import AbortController, FixtureProviderAdapter, ModelRequest, ScriptedModel, text_reply
from tether._async.ownership import IdentitySet, claim_iterator_once, trusted_errors
from tether.models.scripted import ScriptedModelError
from tether.providers.fixture import FixtureProviderError


class Plain:
    """An ordinary weak-referenceable object."""


class Slotted:
    """Cannot be weakly referenced: ``__slots__`` without ``__weakref__``."""

    __slots__ = ("value",)

    def __init__(self, value: int = 0) -> None:
        self.value = value


class Hostile:
    """Comparison and hashing both raise."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__ must not be called")

    def __hash__(self) -> int:
        raise RuntimeError("__hash__ must not be called")


class SlottedHostile:
    """Hostile and not weak-referenceable."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__ must not be called")

    def __hash__(self) -> int:
        raise RuntimeError("__hash__ must not be called")


class AlwaysEqual:
    """Every instance claims to equal every other and shares one hash."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 1


class SlottedAlwaysEqual:
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 1


CLAIMABLE_KINDS = [Plain, Slotted, Hostile, SlottedHostile, AlwaysEqual, object]


@pytest.mark.parametrize("kind", CLAIMABLE_KINDS, ids=[kind.__name__ for kind in CLAIMABLE_KINDS])
def test_an_object_can_be_claimed_exactly_once(kind: type[Any]) -> None:
    item = kind()

    assert claim_iterator_once(item) is True
    assert claim_iterator_once(item) is False
    assert claim_iterator_once(item) is False


@pytest.mark.parametrize(
    "kind", [AlwaysEqual, SlottedAlwaysEqual], ids=["weakrefable", "not-weakrefable"]
)
def test_equal_but_distinct_objects_are_claimed_separately(kind: type[Any]) -> None:
    first, second = kind(), kind()
    assert first == second

    assert claim_iterator_once(first) is True
    assert claim_iterator_once(second) is True
    assert claim_iterator_once(first) is False
    assert claim_iterator_once(second) is False


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, 7, 2**80, 1.5, 1j, "iterator", "", b"bytes"],
    ids=["none", "true", "false", "zero", "int", "bigint", "float", "complex", "str", "empty", "b"],
)
def test_primitives_are_never_claimable(value: object) -> None:
    assert claim_iterator_once(value) is False
    assert claim_iterator_once(value) is False


def test_claims_do_not_keep_weakrefable_objects_alive() -> None:
    item = Plain()
    reference = weakref.ref(item)
    assert claim_iterator_once(item) is True

    del item
    gc.collect()

    assert reference() is None


def test_a_new_object_reusing_a_dead_objects_id_is_claimable() -> None:
    for _ in range(1_000):
        item = Plain()
        address = id(item)
        assert claim_iterator_once(item) is True
        del item
        successor = Plain()
        if id(successor) == address:
            assert claim_iterator_once(successor) is True
            return
    pytest.skip("the allocator never reused an address")


def test_identity_set_tracks_membership_by_identity() -> None:
    registry = IdentitySet()
    hostile, slotted, equal = Hostile(), SlottedHostile(), AlwaysEqual()

    assert registry.add(hostile) is True
    assert registry.add(slotted) is True
    assert hostile in registry
    assert slotted in registry
    assert equal not in registry
    assert AlwaysEqual() not in registry
    assert registry.add(hostile) is False
    assert registry.add(slotted) is False


def test_claims_and_trusted_errors_survive_reload() -> None:
    before_claim = Plain()
    assert claim_iterator_once(before_claim) is True
    errors_before = trusted_errors()

    reloaded = importlib.reload(ownership)

    assert reloaded.claim_iterator_once(before_claim) is False
    assert claim_iterator_once(before_claim) is False
    assert reloaded.trusted_errors() is errors_before
    after_claim = Plain()
    assert reloaded.claim_iterator_once(after_claim) is True
    assert claim_iterator_once(after_claim) is False


async def test_models_still_share_the_registry_after_reload() -> None:
    importlib.reload(ownership)
    request = ModelRequest(id="request-001", messages=())
    signal = AbortController().signal
    shared = text_reply("once")(request, signal)
    assert ownership.claim_iterator_once(shared) is True

    def factory(request: ModelRequest, signal: Any) -> Any:
        return shared

    stream = ScriptedModel([factory]).stream(request, signal)
    with pytest.raises(ScriptedModelError) as caught:
        await stream.result

    assert caught.value.code == "SCRIPT_ITERATOR_REUSED"


async def test_adapter_rejects_a_source_claimed_through_the_reloaded_module() -> None:
    async def records() -> AsyncIterator[object]:
        yield {"type": "response_start", "responseId": "r", "role": "assistant"}

    source = records()
    importlib.reload(ownership)
    assert ownership.claim_iterator_once(source) is True
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": source}]})

    stream = adapter.stream(ModelRequest(id="request-001", messages=()), AbortController().signal)
    with pytest.raises(FixtureProviderError) as caught:
        await stream.result

    assert caught.value.code == "PROVIDER_ITERATOR_REUSED"
