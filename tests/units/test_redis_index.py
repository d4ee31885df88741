"""RedisPrefixIndex beyond the shared contract: the state machine, any number of media,
chunked batches counted once, exactly-once completion after a lost reply, typed
unavailability, the namespace hash tag and the sweep of dead slots.

Runs against the shared server (``PREFIXKEY_TEST_REDIS_URL``, see
tests/redis_servers.py); kills and restarts are in tests/end_to_end/test_redis_faults.py.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import settings
from index_events import G, batch, held, removed, stored
from redis_servers import flushed_client, shared_client
from test_index import IndexMachine

from prefixkey import Hasher
from prefixkey.events import AllBlocksCleared, EventBatch, EventHash
from prefixkey.fleet import (
    IndexUnavailableError,
    PrefixIndex,
    RedisPrefixIndex,
    ReplicaScheme,
    Router,
    prometheus_text,
)

H16 = Hasher(block_size=16, python_hash_seed="0")


client = pytest.fixture(flushed_client, name="client")


# -- the model-based state machine, on Redis ---------------------------------------

class RedisIndexMachine(IndexMachine):
    """IndexMachine over Redis: same model; the bound is per replica there."""

    # None until make_index connects. Without a server shared_client() skips (fails
    # under CI) inside setup, and Hypothesis still runs teardown: it must not mask
    # the skip with an AttributeError.
    client: Any = None

    def make_index(self, bound: int) -> Any:
        self.client = shared_client()
        return RedisPrefixIndex(self.client, max_entries=bound, sweep_every=3)

    def teardown(self) -> None:
        if self.client is not None:
            self.client.flushdb()
            self.client.close()

    def check_size(self, stats: Mapping[str, Any],
                   view: set[tuple[str, int, str, EventHash]]) -> None:
        for name in self.registered:
            assert self.index.replica_size(name) <= self.index.max_entries
        assert stats["size"] == len(self.index) == len({(n, g, k) for n, g, _, k in view})


TestRedisIndexMachine = RedisIndexMachine.TestCase
TestRedisIndexMachine.settings = settings(max_examples=25, stateful_step_count=20,
                                          deadline=None)


# -- media: no bit table, so no width limit ------------------------------------------

def test_more_media_than_any_bit_table(client: Any) -> None:
    """1,100 medium names (past Lua's 32-bit ops and past 1,024): exact, and routable."""
    memory, shared = PrefixIndex(), RedisPrefixIndex(client)
    tokens = list(range(16 * 6 + 1))
    fine = H16.block_hashes(tokens)
    names = [f"TIER{i:04d}" for i in range(1100)]
    for index in (memory, shared):
        index.register("a", ReplicaScheme(H16, publishes="bytes"))
        index.register("b", ReplicaScheme(H16, publishes="bytes"))
        index.apply("a", batch(*(stored(fine[0], medium=n) for n in names)))
        index.apply("a", batch(stored(*fine[1:4], medium=names[1099]), ts=2))
        index.apply("b", batch(stored(*fine[:2], medium=names[40]), ts=3))
    assert held(shared, "b") == held(memory, "b") == {
        (0, k, frozenset({"TIER0040"})) for k in fine[:2]}
    assert held(shared) == held(memory)
    assert shared.media("a", fine[0]) == frozenset(names)
    assert shared.medium_bits()["TIER1099"] == memory.medium_bits()["TIER1099"] == 1 << 1102
    weights = {"TIER1099": 1.0, "TIER0040": 0.9}
    expected = Router(memory, tier_weights=weights).route(tokens)
    assert [(d.replica.name, d.hit_tokens) for d in expected] == [("a", 64), ("b", 32)]
    assert Router(shared, tier_weights=weights).route(tokens) == expected


# -- chunks: bounded calls, counted once -----------------------------------------------

class _Counting:
    """A client whose script calls are counted; ``lose_reply_at`` drops one reply."""

    def __init__(self, client: Any, lose_reply_at: int | None = None) -> None:
        self._client = client
        self.calls = 0
        self.lose_reply_at = lose_reply_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def register_script(self, source: str) -> Any:
        script = self._client.register_script(source)

        def run(*, keys: list[Any], args: list[Any]) -> Any:
            self.calls += 1
            result = script(keys=keys, args=args)
            if self.calls == self.lose_reply_at:
                import redis

                raise redis.exceptions.ConnectionError("connection lost (test)")
            return result
        return run


def _big_batch() -> EventBatch:
    return batch(stored(*range(50)), removed(*range(0, 50, 7)), stored(*range(40, 61)),
                 AllBlocksCleared(), stored(*range(100, 125), group=1), removed(999))


def test_a_large_batch_is_chunked_and_counted_once(client: Any) -> None:
    counting = _Counting(client)
    shared = RedisPrefixIndex(counting, chunk_blocks=7, sweep_every=0)
    memory = PrefixIndex()
    for index in (shared, memory):
        index.register("a", ReplicaScheme(H16))
    counting.calls = 0
    b = _big_batch()
    shared.apply("a", b)
    memory.apply("a", b)
    blocks = 50 + 8 + 21 + 1 + 25 + 1  # the clear counts as one
    assert counting.calls >= math.ceil(blocks / 7)
    assert held(shared) == held(memory)
    assert shared.stats() == memory.stats()  # batches 1, events 6: counted once


def test_the_bound_holds_across_chunks_and_keeps_heads(client: Any) -> None:
    shared = RedisPrefixIndex(client, max_entries=10, chunk_blocks=4)
    shared.register("a", ReplicaScheme(H16))
    shared.apply("a", batch(stored(*range(25))))
    assert {k for _, k, _ in shared.entries("a")} == set(range(10))  # tail first, in chunks
    assert shared.stats()["evictions"] == 15


@pytest.mark.parametrize("lost", [1, 3, 5])
def test_a_lost_reply_then_a_retry_applies_the_batch_once(client: Any, lost: int) -> None:
    counting = _Counting(client)
    shared = RedisPrefixIndex(counting, chunk_blocks=7, sweep_every=0)
    memory = PrefixIndex()
    for index in (shared, memory):
        index.register("a", ReplicaScheme(H16))
    counting.calls, counting.lose_reply_at = 0, lost
    b = _big_batch()
    with pytest.raises(IndexUnavailableError) as info:
        shared.apply("a", b)  # chunk `lost` was applied, its reply lost
    assert info.value.field == "index" and isinstance(info.value, ConnectionError)
    shared.apply("a", b)  # the caller retries: applied chunks are skipped
    memory.apply("a", b)
    assert held(shared) == held(memory)
    assert shared.stats() == memory.stats()
    shared.apply("a", b)  # a later duplicate is a new batch, as in memory
    memory.apply("a", b)
    assert shared.stats() == memory.stats()


# -- availability, namespaces, sweep, metrics --------------------------------------------

def test_an_unreachable_server_raises_index_unavailable() -> None:
    pytest.importorskip("redis", reason="needs redis-py: pip install -e '.[test]'")
    index = RedisPrefixIndex.from_url("redis://127.0.0.1:9/0", timeout=0.2)
    with pytest.raises(IndexUnavailableError) as info:
        index.register("a", ReplicaScheme(H16))
    assert info.value.field == "index" and "did not answer" in str(info.value)
    with pytest.raises(IndexUnavailableError):
        index.apply("a", batch(stored(1)))
    with pytest.raises(IndexUnavailableError):
        Router(index).route([1, 2, 3])


def test_a_namespace_is_one_hash_tag(client: Any) -> None:
    index = RedisPrefixIndex(client, namespace="model-a", ttl_seconds=60)
    index.register("a", ReplicaScheme(H16))
    index.apply("a", batch(stored(1, 2), stored(3, group=1), removed(1, medium="CPU")))
    keys = [bytes(k) for k in client.keys("*")]
    assert keys and all(k.startswith(b"{model-a}:") for k in keys)
    from prefixkey.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError) as info:
        RedisPrefixIndex(client, namespace="a{b}")
    assert info.value.field == "namespace"


def _tokens(client: Any) -> int:
    return sum(len(bytes(v)) // 6 for g in (0, 1)
               for v in client.hgetall(f"{{prefixkey}}:h:{g}").values())


def test_sweep_deletes_tokens_of_dead_slots_only(client: Any) -> None:
    index = RedisPrefixIndex(client, sweep_every=0)
    for name in "abc":
        index.register(name, ReplicaScheme(H16))
        index.apply(name, batch(stored(1, 2, 3), stored(7, group=1)))
    assert _tokens(client) == 12
    # a's old slot dies and the same apply reaps its tokens (its LRU names them)
    index.apply("a", batch(AllBlocksCleared(), stored(9), ts=2))
    assert _tokens(client) == 9
    index.remove_replica("b")
    index.register("c", ReplicaScheme(Hasher(block_size=16, vllm_version="0.30.0")))
    assert _tokens(client) == 9  # b's and c's old slots are dead, not yet reaped
    dropped = sum(index.sweep(budget=1) for _ in range(10))  # steps resume round the groups
    assert dropped == 8
    assert _tokens(client) == 1 and held(index) == {(0, 9, G)}


def test_router_metrics(client: Any) -> None:
    index = RedisPrefixIndex(client)
    index.register("a", ReplicaScheme(H16))
    tokens = list(range(16 * 3 + 1))
    index.apply("a", batch(stored(*H16.block_hashes(tokens)[:2])))
    router = Router(index)
    assert router.route(tokens)[0].evidence == "confirmed"
    assert router.route([5] * 40)[0].evidence == "none"
    m = router.metrics
    assert (m.decisions, m.fallbacks, m.hit_tokens, m.prompt_tokens) == (2, 1, 32, 89)
    assert m.fallback_rate == 0.5 and m.hit_rate == 32 / 89
    text = prometheus_text({"replicas": {}, "queue_depth": 0, "queue_capacity": 1,
                            "router": m.as_dict()})
    assert "prefixkey_router_fallbacks_total 1" in text


@pytest.mark.parametrize("seed", range(6))
def test_ranking_matches_memory_on_large_random_fleets(client: Any, seed: int) -> None:
    """40 replicas, prefixes of random depth on random media, holes and re-stores:
    the server-side walk (equal holders skipped, few-token changes found by
    binary search, others decoded) ranks as the in-memory walk does."""
    rng = random.Random(seed)
    memory, shared = PrefixIndex(), RedisPrefixIndex(client, sweep_every=0)
    prompts = [[rng.randrange(1000) for _ in range(16 * 64 + 3)] for _ in range(3)]
    fine = [H16.block_hashes(p) for p in prompts]
    media = ["GPU", "CPU", "STORAGE", "DISK"]
    names = [f"r{i}" for i in range(40)]
    schemes = {n: ReplicaScheme(H16, publishes=rng.choice(["int", "bytes"])) for n in names}
    for index in (memory, shared):
        for name in names:
            index.register(name, schemes[name])
    for step in range(300):
        name, keys = rng.choice(names), rng.choice(fine)
        depth = rng.randint(0, len(keys))
        event: Any = stored(*keys[:depth], medium=rng.choice(media))
        if rng.random() < 0.25:  # a hole, or a medium dropped
            start = rng.randrange(depth + 1)
            event = removed(*keys[start:start + rng.randint(1, 4)], medium=rng.choice(media))
        for index in (memory, shared):
            index.apply(name, batch(event, ts=float(step)))
    weights = [{"GPU": 1.0, "CPU": 0.8, "STORAGE": 0.5},
               {"GPU": 1.0, "CPU": 0.0, "STORAGE": 0.5, "DISK": 0.7}]
    held_some = False
    for tokens in prompts:
        for w in weights:
            expected = Router(memory, tier_weights=w).route(tokens)
            held_some |= expected[0].hit_tokens > 0
            assert Router(shared, tier_weights=w).route(tokens) == expected
            some = rng.sample(names, 7)
            assert (Router(shared, tier_weights=w).route(tokens, some)
                    == Router(memory, tier_weights=w).route(tokens, some))
    assert held_some


def test_a_failed_sweep_step_does_not_fail_an_applied_batch(client: Any) -> None:
    index = RedisPrefixIndex(client, sweep_every=1)
    index.register("a", ReplicaScheme(H16))

    def down(budget: int = 512) -> int:
        raise IndexUnavailableError("down (test)")

    index.sweep = down  # type: ignore[method-assign]
    index.apply("a", batch(stored(1, 2)))  # applied, then the sweep step fails: no error
    assert index.stats()["batches"] == 1 and held(index) == {(0, 1, G), (0, 2, G)}
