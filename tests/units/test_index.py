"""PrefixIndex: replicas, memory bound, schemes, and a model-based state machine.

Event sequences, replica registration and removal run on every backend
(the in-memory one included) in tests/units/test_index_contract.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from index_events import G, batch, held, removed, stored

from prefixkey import Hasher, LoRA, Request, block_hash_to_int64
from prefixkey.events import AllBlocksCleared, BlockStored, EventBatch, EventHash
from prefixkey.fleet import GroupSpec, PrefixIndex, ReplicaScheme, Router, UnsupportedLayoutError

H16 = Hasher(block_size=16, python_hash_seed="0")


def ints(keys: list[Any]) -> list[int]:
    """Keys as an int-publishing replica's events carry them."""
    return [block_hash_to_int64(k) for k in keys]


def test_memory_bound_evicts_lru_from_largest_replica() -> None:
    index = PrefixIndex(max_entries=4)
    index.register("big", ReplicaScheme(H16))
    index.register("small", ReplicaScheme(H16))
    index.apply("small", batch(stored(100)))
    index.apply("big", batch(stored(1, 2, 3)))  # size 4 = bound
    index.apply("big", batch(stored(4), ts=2))  # evicts big's least recently stored
    assert len(index) == 4 and index.stats()["evictions"] == 1
    # one BlockStored is recorded tail first: the chain loses block 3, not block 1
    assert {k for _, k, _ in index.entries("big")} == {1, 2, 4}
    assert held(index, "small") == {(0, 100, G)}
    index.apply("big", batch(stored(1), ts=3))  # refresh 1: now 2 is the oldest
    index.apply("big", batch(stored(5), ts=4))
    assert {k for _, k, _ in index.entries("big")} == {1, 4, 5}


def test_memory_bound_holds_within_one_large_event() -> None:
    index = PrefixIndex(max_entries=10)
    index.register("a", ReplicaScheme(H16))
    index.apply("a", batch(stored(*range(25))))
    assert len(index) == 10 and index.stats()["evictions"] == 15
    assert {k for _, k, _ in index.entries("a")} == set(range(10))  # heads survive


def test_int_and_bytes_publishers_of_one_release_match_the_same_request() -> None:
    tokens = list(range(64))
    fine = H16.block_hashes(tokens)
    index = PrefixIndex()
    index.register("ints", ReplicaScheme(H16, publishes="int"))
    index.register("bytes", ReplicaScheme(H16, publishes="bytes"))
    index.apply("ints", batch(stored(*ints(fine))))
    index.apply("bytes", batch(stored(*fine)))
    decisions = Router(index).route([*tokens, 1])
    assert {d.replica.name: d.hit_tokens for d in decisions} == {"ints": 64, "bytes": 64}


def test_replicas_on_different_releases_with_lora() -> None:
    request = Request(list(range(48)), lora=LoRA("sql", "/adapters/sql", 1))
    old = Hasher(block_size=16, python_hash_seed="0", vllm_version="0.30.0")
    new = Hasher(block_size=16, python_hash_seed="0", vllm_version="0.31.0")
    old_keys, new_keys = old.block_hashes(request), new.block_hashes(request)
    assert old_keys[0] != new_keys[0]  # 0.31 keys the LoRA path too
    index = PrefixIndex()
    index.register("v030", ReplicaScheme(old))
    index.register("v031", ReplicaScheme(new))
    index.apply("v030", batch(stored(*ints(old_keys[:1]))))
    index.apply("v031", batch(stored(*ints(new_keys))))
    first, second = Router(index).route(request)
    assert (first.replica.name, first.hit_tokens) == ("v031", 32)  # 48 tokens: cap at 47
    assert (second.replica.name, second.hit_tokens) == ("v030", 16)
    # each replica's keys are looked up under its own release only
    swapped = PrefixIndex()
    swapped.register("v030", ReplicaScheme(old))
    swapped.apply("v030", batch(stored(*ints(new_keys))))
    assert Router(swapped).route(request)[0].hit_tokens == 0


def test_int_era_replica() -> None:
    old = Hasher(block_size=16, hash_algo="sha256_cbor_64bit", vllm_version="0.10.1.1",
                 python_hash_seed="0")
    tokens = list(range(40))
    index = PrefixIndex()
    index.register("int-era", ReplicaScheme(old))
    index.apply("int-era", batch(stored(*old.block_hashes(tokens))))
    assert Router(index).route(tokens)[0].hit_tokens == 32
    with pytest.raises(ValueError, match="publishes ints"):
        ReplicaScheme(old, publishes="bytes")


@pytest.mark.parametrize(("groups", "version"), [
    ((GroupSpec(16), GroupSpec(16, "sliding_window")), "0.31.0"),
    ((GroupSpec(16), GroupSpec(16, "mamba")), "0.31.0"),
    ((GroupSpec(24),), "0.31.0"),
    ((GroupSpec(16), GroupSpec(32)), "0.11.0"),
])
def test_unsupported_layouts_are_refused(groups: tuple[GroupSpec, ...], version: str) -> None:
    hasher = Hasher(block_size=16, python_hash_seed="0", vllm_version=version)
    with pytest.raises(UnsupportedLayoutError):
        ReplicaScheme(hasher, groups=groups)


# -- model-based: PrefixIndex against a dict of sets ---------------------------

KEYS = st.integers(0, 7)
REPLICAS = st.sampled_from(["a", "b", "ghost"])
MEDIA = st.sampled_from([None, "GPU", "CPU", "STORAGE"])
GROUPS = st.sampled_from([None, 0, 1])
EVENTS = st.one_of(
    st.builds(lambda ks, m, g: stored(*ks, medium=m, group=g), st.lists(KEYS, max_size=5),
              MEDIA, GROUPS),
    st.builds(lambda ks, m, g: removed(*ks, medium=m, group=g), st.lists(KEYS, max_size=5),
              MEDIA, GROUPS),
    st.just(AllBlocksCleared()),
)


class IndexMachine(RuleBasedStateMachine):
    """Set semantics per (replica, group, medium); with a bound, the index is a subset."""

    @initialize(bound=st.sampled_from([1000, 6]))
    def setup(self, bound: int) -> None:
        self.index = self.make_index(bound)
        self.model: dict[tuple[str, int, str], set[int]] = {}
        self.registered = {"a", "b"}
        self.unknown_events = 0
        self.ts = 0.0
        self.applied: list[tuple[str, EventBatch]] = []
        for name in self.registered:
            self.index.register(name, ReplicaScheme(H16))

    def make_index(self, bound: int) -> Any:
        return PrefixIndex(max_entries=bound)

    def _model_apply(self, name: str, b: EventBatch) -> None:
        if name not in self.registered:
            self.unknown_events += len(b.events)
            return
        for ev in b.events:
            if isinstance(ev, AllBlocksCleared):
                for k in [k for k in self.model if k[0] == name]:
                    del self.model[k]
                continue
            slot = (name, ev.group_idx or 0, ev.medium or "GPU")
            if isinstance(ev, BlockStored):
                self.model.setdefault(slot, set()).update(ev.block_hashes)  # type: ignore[arg-type]
            else:
                self.model.get(slot, set()).difference_update(ev.block_hashes)

    @rule(name=REPLICAS, events=st.lists(EVENTS, max_size=4))
    def apply(self, name: str, events: list[Any]) -> None:
        self.ts += 1
        b = batch(*events, ts=self.ts)
        self.index.apply(name, b)
        self._model_apply(name, b)
        self.applied.append((name, b))

    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        """A duplicated (possibly stale) batch."""
        if self.applied:
            name, b = data.draw(st.sampled_from(self.applied))
            self.index.apply(name, b)
            self._model_apply(name, b)

    @rule(name=st.sampled_from(["a", "b"]))
    def remove_and_reregister(self, name: str) -> None:
        self.index.remove_replica(name)
        self.index.register(name, ReplicaScheme(H16))
        for k in [k for k in self.model if k[0] == name]:
            del self.model[k]

    def _index_view(self) -> set[tuple[str, int, str, EventHash]]:
        return {(name, g, m, key) for name in self.registered
                for g, key, media in self.index.entries(name) for m in media}

    @invariant()
    def matches_model(self) -> None:
        model = {(n, g, m, k) for (n, g, m), keys in self.model.items() for k in keys}
        view = self._index_view()
        stats = self.index.stats()
        if stats["evictions"] == 0:
            assert view == model
        else:
            assert view <= model
        self.check_size(stats, view)
        assert stats["unknown_replica_events"] == self.unknown_events

    def check_size(self, stats: Mapping[str, Any],
                   view: set[tuple[str, int, str, EventHash]]) -> None:
        """The size the stats report is the index's, one per (replica, group, key) held,
        and within the bound (on the whole index here)."""
        assert stats["size"] == len(self.index) <= self.index.max_entries
        assert stats["size"] == len({(n, g, k) for n, g, _, k in view})


TestIndexMachine = IndexMachine.TestCase
