"""One contract for every prefix-index backend: in-memory PrefixIndex and RedisPrefixIndex.

The redis backend runs against a real redis-server (``PREFIXKEY_TEST_REDIS_URL``
or redis://127.0.0.1:6379/15, flushed before each test). Without a server the
redis tests fail when ``CI`` is set and are skipped otherwise.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import pytest
from index_events import C, G, S, batch, held, removed, stored
from redis_servers import flushed_client, shared_client

from prefixkey import Hasher, block_hash_to_int64
from prefixkey.core import BlockHash
from prefixkey.events import AllBlocksCleared, DecodedOps, EventBatch
from prefixkey.fleet import (
    GroupSpec,
    PredictedIndex,
    PrefixIndex,
    PrefixIndexBackend,
    RedisPrefixIndex,
    ReplicaId,
    ReplicaScheme,
    Router,
    RunsQuery,
    UnknownReplicaError,
)
from prefixkey.fleet.index import INDEX_COUNTERS, INDEX_GAUGES

H16 = Hasher(block_size=16, python_hash_seed="0")


def _sha256(keys: Sequence[BlockHash]) -> list[bytes]:
    """sha256 keys, which are bytes (``BlockHash`` also covers builtin ``hash()`` ints)."""
    assert all(isinstance(k, bytes) for k in keys)
    return cast("list[bytes]", keys)
Factory = Callable[..., PrefixIndexBackend]


@pytest.fixture(params=["memory", "redis"])
def make(request: pytest.FixtureRequest) -> Iterator[Factory]:
    if request.param == "memory":
        yield lambda **kw: PrefixIndex(**kw)
        return
    client = shared_client()
    yield lambda **kw: RedisPrefixIndex(client, **kw)
    client.flushdb()
    client.close()


redis_client = pytest.fixture(flushed_client, name="redis_client")


def test_protocol_is_satisfied(make: Factory) -> None:
    assert isinstance(make(), PrefixIndexBackend)


def test_register_and_schemes(make: Factory) -> None:
    index = make()
    groups = (GroupSpec(16), GroupSpec(32))
    scheme = ReplicaScheme(H16, publishes="bytes", groups=groups)
    assert index.register(ReplicaId("a", 1), scheme) == ReplicaId("a", 1)
    index.register("b", ReplicaScheme(H16))
    assert set(index.replicas()) == {ReplicaId("a", 1), ReplicaId("b")}
    assert index.scheme(ReplicaId("a", 1)).key == scheme.key
    assert index.replicas()[ReplicaId("b")].key == ReplicaScheme(H16).key
    with pytest.raises(UnknownReplicaError):
        index.scheme("ghost")
    assert len(index) == 0 and index.stats()["replicas"] == 2


CASES: list[tuple[str, list[EventBatch], set[Any], dict[str, int]]] = [
    ("store", [batch(stored(1, 2, 3))], {(0, 1, G), (0, 2, G), (0, 3, G)},
     {"stores": 3, "size": 3}),
    ("store then remove", [batch(stored(1, 2, 3)), batch(removed(2), ts=2)],
     {(0, 1, G), (0, 3, G)}, {"removes": 1, "size": 2}),
    ("clear", [batch(stored(1, 2), stored(3, group=1)),
               batch(AllBlocksCleared(), stored(7), ts=2)],
     {(0, 7, G)}, {"clears": 1, "size": 1}),
    ("remove unknown key", [batch(removed(9))], set(), {"removes_missing": 1, "size": 0}),
    ("duplicate batch", [batch(stored(1, 2), removed(1))] * 2, {(0, 2, G)},
     {"stores": 3, "refreshes": 1, "removes": 2, "size": 1, "batches": 2, "events": 4}),
    ("re-announcement", [batch(stored(1, 2)), batch(stored(1, 2), ts=2)],
     {(0, 1, G), (0, 2, G)}, {"stores": 2, "refreshes": 2, "size": 2}),
    ("media are independent",
     [batch(stored(1, medium="GPU"), stored(1, medium="CPU"), stored(2, medium="STORAGE")),
      batch(removed(1, medium="GPU"), ts=2)],
     {(0, 1, C), (0, 2, S)}, {"stores": 3, "removes": 1, "size": 2}),
    ("medium None is GPU", [batch(stored(1)), batch(removed(1, medium="gpu"), ts=2)], set(),
     {"size": 0}),
    ("groups are independent", [batch(stored(1, group=0), stored(1, group=1), removed(1))],
     {(1, 1, G)}, {"size": 1}),
    ("0.26 partial pair", [batch(stored(5)), batch(removed(5), stored(6), ts=2)],
     {(0, 6, G)}, {"stores": 2, "removes": 1, "size": 1}),
    ("out of order applied and counted", [batch(stored(1), ts=5), batch(stored(2), ts=3)],
     {(0, 1, G), (0, 2, G)}, {"out_of_order_batches": 1}),
    ("bytes reach an int publisher", [batch(stored(b"\x00" * 24 + (7).to_bytes(8, "big")))],
     {(0, 7, G)}, {"size": 1}),
    ("negative and large int keys", [batch(stored(-5, 2**63 - 1, -(2**63)))],
     {(0, -5, G), (0, 2**63 - 1, G), (0, -(2**63), G)}, {"size": 3}),
    ("ints past 64 bits, 8-digit and 9-byte ones",
     [batch(stored(2**64 + 5, -(2**70), 12345678, -12345678, 2**64 - 1, -(2**64) + 1))],
     {(0, 2**64 + 5, G), (0, -(2**70), G), (0, 12345678, G), (0, -12345678, G),
      (0, 2**64 - 1, G), (0, -(2**64) + 1, G)}, {"size": 6}),
    ("unknown medium gets a bit", [batch(stored(1, medium="disk"))],
     {(0, 1, frozenset({"DISK"}))}, {"size": 1}),
]


@pytest.mark.parametrize("via", ["apply", "apply_ops", "PredictedIndex.apply_ops"])
@pytest.mark.parametrize(("batches", "expected", "counters"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_event_sequences(make: Factory, batches: list[EventBatch], expected: set[Any],
                         counters: dict[str, int], via: str) -> None:
    """``apply`` of a batch and ``apply_ops`` of its ops (what the subscribers feed every
    backend) hold the same entries and count the same, a ``PredictedIndex`` in front or not."""
    index = make()
    if via.startswith("PredictedIndex"):
        index = PredictedIndex(index)
    index.register("a", ReplicaScheme(H16))
    for b in batches:
        if via == "apply":
            index.apply("a", b)
        else:
            index.apply_ops("a", DecodedOps.of_batch(b))
    assert held(index) == expected
    stats = cast("Mapping[str, int]", index.stats())  # read by name
    assert {k: stats[k] for k in counters} == counters
    assert stats["size"] == len(index) == index.replica_size("a") == len(expected)


def test_per_medium_lookups(make: Factory) -> None:
    index = make()
    index.register("a", ReplicaScheme(H16))
    index.apply("a", batch(stored(1, 2, medium="GPU"), stored(2, 3, medium="CPU"),
                           stored(4, group=1)))
    assert index.media("a", 1) == G
    assert index.media("a", 2) == G | C
    assert index.media("a", 3) == C
    assert index.media("a", 4) == frozenset()
    assert index.media("a", 4, group=1) == G
    bits = index.medium_bits()
    assert {k: bits[k] for k in ("GPU", "CPU", "STORAGE")} == {"GPU": 1, "CPU": 2, "STORAGE": 4}
    table = index.table("a")
    assert table.get(2) == 3 and table.get(9) is None and table.get(3) == 2
    assert len(table) == 3 and set(table) == {1, 2, 3}


def test_unknown_replica_is_counted_not_raised(make: Factory) -> None:
    index = make()
    index.register("a", ReplicaScheme(H16))
    index.apply("ghost", batch(stored(1), stored(2)))
    stats = index.stats()
    assert (stats["unknown_replica_batches"], stats["unknown_replica_events"]) == (1, 2)
    assert stats["size"] == 0 and stats["batches"] == 0
    with pytest.raises(UnknownReplicaError):
        index.table("ghost")


def test_dp_rank_from_batch_and_remove_replica(make: Factory) -> None:
    index = make()
    index.register(ReplicaId("a", 1), ReplicaScheme(H16))
    index.register("b", ReplicaScheme(H16))
    index.apply("a", batch(stored(1), rank=1))
    index.apply("a", batch(stored(2), rank=0))  # rank 0 of "a" is not registered
    index.apply("b", batch(stored(1, 2, 3)))
    assert held(index, ReplicaId("a", 1)) == {(0, 1, G)}
    assert index.stats()["unknown_replica_batches"] == 1
    assert index.remove_replica(ReplicaId("a", 1)) == 1
    assert len(index) == 3 and index.remove_replica("a") == 0
    assert set(index.replicas()) == {ReplicaId("b")}
    index.register(ReplicaId("a", 1), ReplicaScheme(H16))  # back, and empty
    assert held(index, ReplicaId("a", 1)) == set()


def test_int_and_bytes_publishers(make: Factory) -> None:
    index = make()
    index.register("ints", ReplicaScheme(H16, publishes="int"))
    index.register("bytes", ReplicaScheme(H16, publishes="bytes"))
    digest = b"\x01|" * 16  # contains the member separator on purpose
    index.apply("bytes", batch(stored(digest, 5)))
    index.apply("ints", batch(stored(digest, 5)))
    assert held(index, "bytes") == {(0, digest, G)}
    assert held(index, "ints") == {(0, block_hash_to_int64(digest), G), (0, 5, G)}
    assert index.stats()["hash_type_mismatches"] == 1
    index.apply("bytes", batch(removed(digest), ts=2))
    assert held(index, "bytes") == set()


def test_reregistering_with_another_scheme_drops_entries(make: Factory) -> None:
    index = make()
    index.register("a", ReplicaScheme(H16))
    index.apply("a", batch(stored(1)))
    index.register("a", ReplicaScheme(H16))  # same scheme: kept
    assert len(index) == 1
    index.register("a", ReplicaScheme(Hasher(block_size=16, vllm_version="0.30.0")))
    assert len(index) == 0 and held(index) == set()


def _count_everything(index: PrefixIndexBackend) -> dict[str, int]:
    """Batches that move every counter of the contract; the contract's part of stats()."""
    index.register("a", ReplicaScheme(H16, publishes="bytes"))
    index.apply("a", batch(stored(b"1", b"2", 7), ts=2))  # an int key: a mismatch
    index.apply("a", batch(stored(b"1"), removed(b"9"), ts=1))  # refresh, missing, late
    index.apply("a", batch(stored(b"3", b"4"), removed(b"1"), ts=3))  # eviction (3 at most)
    index.apply("a", batch(AllBlocksCleared(), ts=4))
    index.apply("ghost", batch(stored(1), stored(2)))
    stats = cast("Mapping[str, int]", index.stats())  # read by name
    assert set(INDEX_COUNTERS) | set(INDEX_GAUGES) <= set(stats)
    return {name: stats[name] for name in (*INDEX_COUNTERS, *INDEX_GAUGES)}


def test_every_backend_reports_the_contract_counters(make: Factory) -> None:
    counted = _count_everything(make(max_entries=3))
    assert all(counted[name] > 0 for name in INDEX_COUNTERS), counted
    assert (counted["size"], counted["max_entries"], counted["replicas"]) == (0, 3, 1)


def test_stats_are_the_typed_dicts_they_declare(make: Factory) -> None:
    """Each backend's stats() has exactly its TypedDict's keys (the fault counters of Redis
    only once non-zero), and the counters' table is read from the TypedDict, in order."""
    from prefixkey.fleet.index import IndexStats, RedisIndexStats
    from prefixkey.fleet.index._backend import IndexCounters
    from prefixkey.fleet.index._redis import FAULT_COUNTERS

    assert list(INDEX_COUNTERS) == list(IndexCounters.__annotations__)
    assert [*INDEX_COUNTERS, *INDEX_GAUGES] == list(IndexStats.__annotations__)
    assert FAULT_COUNTERS == ("resyncs", "resets_after_restart", "resets_after_missing_keys")
    assert set(FAULT_COUNTERS) == RedisIndexStats.__optional_keys__
    index = make(max_entries=3)
    _count_everything(index)
    for backend in (index, PredictedIndex(index)):
        keys = set(backend.stats())
        assert IndexStats.__required_keys__ <= keys <= RedisIndexStats.__annotations__.keys()
        if isinstance(index, PrefixIndex):
            assert keys == IndexStats.__required_keys__


def test_predictions_stats_are_their_typed_dict() -> None:
    from prefixkey.fleet import PREDICTION_COUNTERS, Predictions, PredictionStats
    from prefixkey.fleet.routing._predictions import PredictionCounters

    assert list(PREDICTION_COUNTERS) == list(PredictionCounters.__annotations__)
    predictions = Predictions()
    predictions.record("a", [[1, 2]])
    assert set(predictions.stats()) == PredictionStats.__required_keys__
    assert set(PredictionStats.__required_keys__) == set(PredictionStats.__annotations__)


def test_memory_and_redis_count_alike(redis_client: Any) -> None:
    assert (_count_everything(RedisPrefixIndex(redis_client, max_entries=3))
            == _count_everything(PrefixIndex(max_entries=3)))


# -- the memory bound both backends guarantee: one replica, one group ----------

def test_bound_evicts_least_recently_stored(make: Factory) -> None:
    index = make(max_entries=3)
    index.register("a", ReplicaScheme(H16))
    index.apply("a", batch(stored(1, 2, 3)))
    index.apply("a", batch(stored(4), ts=2))  # the chain loses its tail (3), not its head
    assert {k for _, k, _ in index.entries("a")} == {1, 2, 4}
    index.apply("a", batch(stored(1), ts=3))  # refresh 1: 2 is now the oldest
    index.apply("a", batch(stored(5), ts=4))
    assert {k for _, k, _ in index.entries("a")} == {1, 4, 5}
    assert [k for _, k, _ in index.entries("a")] == [4, 1, 5]  # least recently stored first
    stats = index.stats()
    assert stats["evictions"] == 2 and stats["size"] == 3 == len(index)


def test_bound_holds_within_one_large_event(make: Factory) -> None:
    index = make(max_entries=10)
    index.register("a", ReplicaScheme(H16))
    index.apply("a", batch(stored(*range(25))))
    assert len(index) == 10 and index.stats()["evictions"] == 15
    assert {k for _, k, _ in index.entries("a")} == set(range(10))  # heads survive


# -- routing: same events, same decisions ----------------------------------------

def _decide(index: PrefixIndexBackend, tokens: list[int],
            candidates: list[str] | None = None, **kw: Any) -> Sequence[Any]:
    return Router(index, **kw).route(tokens, candidates)


def _fleet(index: PrefixIndexBackend, seed: int) -> list[list[int]]:
    """Six replicas on mixed schemes, fed a random stream of prefix stores and removals."""
    old = Hasher(block_size=16, python_hash_seed="0", vllm_version="0.30.0")
    schemes = {
        "i0": ReplicaScheme(H16), "i1": ReplicaScheme(H16),
        "b0": ReplicaScheme(H16, publishes="bytes"),
        "old": ReplicaScheme(old),
        "hyb": ReplicaScheme(H16, groups=(GroupSpec(16), GroupSpec(32))),
        "b1": ReplicaScheme(H16, publishes="bytes"),
    }
    for name, scheme in schemes.items():
        index.register(name, scheme)
    rng = random.Random(seed)
    prompts = [[rng.randrange(50_000) for _ in range(16 * rng.randint(1, 12) + rng.randint(0, 15))]
               for _ in range(6)]
    for step in range(60):
        name = rng.choice(list(schemes))
        scheme = schemes[name]
        prompt = rng.choice(prompts)
        groups = scheme.group_keys(scheme.hasher.block_hashes(prompt))
        gi = rng.randrange(len(groups))
        keys = groups[gi][: rng.randint(0, len(groups[gi]))]
        medium = rng.choice([None, "GPU", "CPU", "STORAGE"])
        r = rng.random()
        if r < 0.7:
            event: Any = stored(*keys, medium=medium, group=gi)
        elif r < 0.95:
            event = removed(*keys[rng.randrange(len(keys) + 1):], medium=medium, group=gi)
        else:
            event = AllBlocksCleared()
        index.apply(name, batch(event, ts=float(step)))
    return prompts


@pytest.mark.parametrize("seed", range(4))
def test_router_decisions_are_identical_across_backends(redis_client: Any, seed: int) -> None:
    memory = PrefixIndex()
    shared = RedisPrefixIndex(redis_client, namespace=f"pk{seed}")
    prompts = _fleet(memory, seed)
    assert _fleet(shared, seed) == prompts
    assert memory.stats() == shared.stats()
    for name in memory.replicas():
        assert held(memory, name) == held(shared, name)
    tokens_list = [*prompts, [p + 1 for p in prompts[0]], prompts[1][:5]]
    for tokens in tokens_list:
        weightings: list[dict[str, Any]] = [
            {}, {"tier_weights": {"GPU": 1.0, "CPU": 0.0, "STORAGE": 0.5}}]
        for kw in weightings:
            expected = _decide(memory, tokens, **kw)
            assert _decide(shared, tokens, **kw) == expected
            assert _decide(shared, tokens, ["b0", "old"], **kw) == _decide(
                memory, tokens, ["b0", "old"], **kw)


def test_decisions_identical_on_the_contract_backends(make: Factory) -> None:
    index = make()
    index.register("a", ReplicaScheme(H16))
    index.register("b", ReplicaScheme(H16, publishes="bytes"))
    tokens = list(range(16 * 6 + 3))
    fine = H16.block_hashes(tokens)
    index.apply("a", batch(stored(*fine[:4], medium="CPU")))
    index.apply("b", batch(stored(*fine[:2]), stored(*fine[2:5], medium="STORAGE")))
    decisions = _decide(index, tokens)
    assert [(d.replica.name, d.hit_tokens) for d in decisions] == [("b", 80), ("a", 64)]
    assert [d.weighted_hit_tokens for d in decisions] == pytest.approx([32 + 24, 51.2])


# -- redis only: sharing, atomicity, one round trip ---------------------------

def test_routers_share_registrations_and_entries(redis_client: Any) -> None:
    one = RedisPrefixIndex(redis_client, namespace="fleet")
    two = RedisPrefixIndex(redis_client, namespace="fleet", registry_max_age=0.0)
    other = RedisPrefixIndex(redis_client, namespace="elsewhere")
    tokens = list(range(16 * 4 + 1))
    fine = H16.block_hashes(tokens)
    one.register("a", ReplicaScheme(H16, publishes="bytes"))
    one.apply("a", batch(stored(*fine[:3])))
    assert set(two.replicas()) == {ReplicaId("a")} and other.replicas() == {}
    assert held(two) == held(one) and len(two) == 3
    assert Router(two).route(tokens)[0].hit_tokens == 48
    # two re-registers "a" as an int publisher: one's next batch is converted again
    two.register("a", ReplicaScheme(H16, publishes="int"))
    one.apply("a", batch(stored(*fine[:2]), ts=2))
    assert held(two) == {(0, block_hash_to_int64(k), G) for k in _sha256(fine[:2])}
    # one's cached registration is stale: its lookup notices and rehashes
    assert Router(one).route(tokens)[0].hit_tokens == 32


def test_ranking_is_one_round_trip_and_per_medium(redis_client: Any) -> None:
    calls: list[Any] = []
    original = redis_client.execute_command

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(args[0])
        return original(*args, **kw)

    index = RedisPrefixIndex(redis_client, registry_max_age=60.0)
    names = [f"r{i}" for i in range(16)]
    for name in names:
        index.register(name, ReplicaScheme(H16))
    hybrid = ReplicaScheme(H16, groups=(GroupSpec(16), GroupSpec(32)))
    index.register("hyb", hybrid)
    tokens = list(range(16 * 8 + 1))
    fine = [block_hash_to_int64(k) for k in _sha256(H16.block_hashes(tokens))]
    index.apply("r3", batch(stored(*fine[:5]), stored(*fine[:2], medium="CPU")))
    router = Router(index)
    router.route(tokens)  # warm the registry and media caches
    redis_client.execute_command = counting
    try:
        decisions = router.route(tokens)
    finally:
        redis_client.execute_command = original
    assert calls == ["EVALSHA"]  # every scheme and group of every candidate: one call
    assert decisions[0].replica.name == "r3" and decisions[0].hit_tokens == 80
    assert decisions[0].evidence == "confirmed" and router.metrics.decisions == 2
    (answer,) = index.leading_runs(
        [RunsQuery(ReplicaScheme(H16), (ReplicaId("r3"), ReplicaId("r4")), (tuple(fine),))],
        media=1 | 2 | 4)
    assert answer.by_replica() == {ReplicaId("r3"): (((3, 2), (1, 3)),), ReplicaId("r4"): ((),)}
    (answer,) = index.leading_runs(
        [RunsQuery(ReplicaScheme(H16), (ReplicaId("r3"),), (tuple(fine),))], media=2)
    assert answer.by_replica() == {ReplicaId("r3"): (((2, 2),),)}


def token(slot: int, mid: int) -> bytes:
    """A holder token: a replica slot (4 bytes) then a medium id (2 bytes), big-endian."""
    return slot.to_bytes(4, "big") + mid.to_bytes(2, "big")


def test_inverted_layout_and_ttl_expires_silent_replicas(redis_client: Any) -> None:
    index = RedisPrefixIndex(redis_client, ttl_seconds=100, sweep_every=0)
    index.register("a", ReplicaScheme(H16))
    index.register("b", ReplicaScheme(H16))
    index.apply("a", batch(stored(1, 2), stored(3, group=1)))
    index.apply("b", batch(stored(1, medium="CPU")))
    slot_a, slot_b = (int(redis_client.hget("{prefixkey}:slot", f'["{n}", 0]'))
                      for n in "ab")
    # one holder string per block key: sorted (slot, medium id) tokens, no bit table
    one, two = (k.to_bytes(8, "big") for k in (1, 2))  # int keys: 8 bytes
    assert redis_client.hgetall("{prefixkey}:h:0") == {
        one: token(slot_a, 0) + token(slot_b, 1), two: token(slot_a, 0)}
    ttls = [redis_client.ttl(k) for k in redis_client.keys("{prefixkey}:s:*")]
    assert ttls and all(0 < t <= 100 for t in ttls)
    for key in redis_client.keys(f"{{prefixkey}}:s:{slot_a}:*"):
        redis_client.expire(key, 0)  # "a" went silent for ttl_seconds
    assert index.replica_size("a") == 0 and held(index) == set()
    assert Router(index).route(list(range(17)), ["a", "b"])[0].hit_tokens == 0
    assert index.sweep() == 2  # a's tokens in group 0 are garbage now
    assert redis_client.hgetall("{prefixkey}:h:0") == {one: token(slot_b, 1)}
    index.apply("a", batch(stored(4), ts=2))  # a new slot: the old tokens stay dead
    assert held(index) == {(0, 4, G)} and held(index, "b") == {(0, 1, C)}


def test_engine_bound_schemes_are_refused(redis_client: Any) -> None:
    index = RedisPrefixIndex(redis_client)
    builtin = Hasher(block_size=16, hash_algo="builtin", vllm_version="0.9.0",
                     python_hash_seed="0", engine_python="3.12")
    with pytest.raises(ValueError, match="cannot be shared"):
        index.register("a", ReplicaScheme(builtin))
