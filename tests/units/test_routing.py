"""Router: longest prefix, tiers, the num_tokens - 1 cap, load, rendezvous fallback, groups."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
import xxhash

from prefixkey import Hasher, InvalidRequestError, Request, block_hash_to_int64, group_block_hashes
from prefixkey.events import BlockStored, EventBatch, EventHash
from prefixkey.fleet import (
    GroupSpec,
    PrefixIndex,
    PreparedRequest,
    ReplicaId,
    ReplicaScheme,
    Router,
    rendezvous_weight,
)

H = Hasher(block_size=16, python_hash_seed="0")
TOKENS = list(range(1000, 1000 + 16 * 8 + 5))  # 8 full blocks and 5 tokens
FINE = H.block_hashes(TOKENS)


def ints(keys: list[Any]) -> list[int]:
    return [block_hash_to_int64(k) for k in keys]


def store(index: PrefixIndex, name: str, keys: list[Any], *, medium: str | None = None,
          group: int | None = None) -> None:
    event = BlockStored(tuple(keys), None, (), 16, medium=medium, group_idx=group)
    index.apply(name, EventBatch(0.0, (event,)))


def make_index(*names: str, scheme: ReplicaScheme | None = None) -> PrefixIndex:
    index = PrefixIndex()
    for name in names:
        index.register(name, scheme or ReplicaScheme(H))
    return index


def idle(replica: ReplicaId) -> float:
    """Every replica equally idle: a load signal of zero (no Router's own count of sends)."""
    return 0.0


def order(decisions: Sequence[Any]) -> list[str]:
    return [d.replica.name for d in decisions]


def test_longest_consecutive_prefix_wins() -> None:
    index = make_index("a", "b", "c")
    store(index, "a", ints(FINE[:3]))
    store(index, "b", ints(FINE[:5]))
    store(index, "c", ints(FINE[:1] + FINE[2:8]))  # a hole at block 1: only block 0 counts
    decisions = Router(index).route(TOKENS)
    assert order(decisions) == ["b", "a", "c"]
    assert [d.hit_tokens for d in decisions] == [80, 48, 16]
    assert [d.matched_blocks for d in decisions] == [(5,), (3,), (1,)]
    assert not any(d.fallback for d in decisions)
    assert "5 leading blocks held (GPU): 80 of 133 tokens" in decisions[0].why


def test_tier_weights() -> None:
    index = make_index("gpu", "cpu", "storage")
    store(index, "gpu", ints(FINE[:4]), medium="GPU")
    store(index, "cpu", ints(FINE[:4]), medium="CPU")
    store(index, "storage", ints(FINE[:4]), medium="STORAGE")
    decisions = Router(index).route(TOKENS)
    assert order(decisions) == ["gpu", "cpu", "storage"]
    assert {d.hit_tokens for d in decisions} == {64}
    assert [d.weighted_hit_tokens for d in decisions] == pytest.approx([64, 51.2, 32])
    # a longer CPU run beats a shorter GPU run...
    store(index, "cpu", ints(FINE[4:8]), medium="CPU")
    assert order(Router(index).route(TOKENS))[0] == "cpu"
    # ...unless CPU hits are weighted out: the run then stops at the first CPU-only block
    router = Router(index, tier_weights={"GPU": 1.0, "CPU": 0.0, "STORAGE": 0.5})
    decisions = router.route(TOKENS)
    assert order(decisions) == ["gpu", "storage", "cpu"]
    assert decisions[-1].hit_tokens == 0



def test_tier_weight_names_are_the_index_medium_names() -> None:
    """A weight's key names a medium as the index holds it: ASCII letters upper-cased
    only, so ``"ß"`` and ``"SS"`` keep their own weights (``str.upper`` merged them)."""
    index = make_index("eszett", "ss", "cpu")
    store(index, "eszett", ints(FINE[:4]), medium="ß")
    store(index, "ss", ints(FINE[:4]), medium="SS")
    store(index, "cpu", ints(FINE[:4]), medium="cpu")
    router = Router(index, tier_weights={"ß": 1.0, "SS": 0.25, "cpu": 0.75})
    assert router.tier_weights == {"ß": 1.0, "SS": 0.25, "CPU": 0.75}
    weighted = {d.replica.name: d.weighted_hit_tokens for d in router.route(TOKENS)}
    assert weighted == pytest.approx({"eszett": 64.0, "ss": 16.0, "cpu": 48.0})
    # two keys naming one medium with different weights: which one was meant?
    with pytest.raises(InvalidRequestError, match=r"tier_weights.*'GPU'"):
        Router(index, tier_weights={"gpu": 1.0, "GPU": 0.5})
    assert Router(index, tier_weights={"gpu": 0.5, "GPU": 0.5}).tier_weights == {"GPU": 0.5}

def test_best_medium_counts_and_mixed_runs_continue() -> None:
    index = make_index("a")
    store(index, "a", ints(FINE[:2]), medium="GPU")
    store(index, "a", ints(FINE[:4]), medium="CPU")
    (decision,) = Router(index).route(TOKENS)
    assert decision.hit_tokens == 64
    assert decision.weighted_hit_tokens == pytest.approx(2 * 16 + 2 * 16 * 0.8)
    assert "CPU+GPU" in decision.why


@pytest.mark.parametrize(("num_tokens", "held", "hit"), [
    (64, 4, 48),   # exact multiple: the last block never hits
    (65, 4, 64),
    (63, 3, 48),
    (16, 1, 0),    # one exact block: nothing reusable
    (17, 1, 16),
    (1, 0, 0),
])
def test_num_tokens_minus_one_cap(num_tokens: int, held: int, hit: int) -> None:
    tokens = TOKENS[:num_tokens]
    index = make_index("a", "b")
    store(index, "a", ints(H.block_hashes(tokens)))
    decisions = Router(index).route(tokens)
    by_name = {d.replica.name: d for d in decisions}
    assert by_name["a"].matched_blocks == (held,)
    assert by_name["a"].hit_tokens == hit
    if held * 16 > hit and hit:
        assert "capped" in by_name["a"].why


# The cost model, in prefill tokens:
#     cost = queued + (2 + L + pressure) * (num_tokens - saved)
# (pressure 0 here: a fresh Router given a load, no send reported), where L is the
# candidates' mean load in requests (tokens over this request's 133 before any send is
# reported): 1 / (1 - utilization) = 1 + L, utilization = L / (1 + L); saved counts each
# reused block's 16 tokens times its medium's tier weight (GPU 1.0, CPU 0.8, STORAGE
# 0.5). TOKENS is 133 tokens: at most 8 blocks (128 tokens) reuse.
# (held: name -> (blocks, medium); loads in tokens; the expected order; the winner's
# prefill still needed)
COST_CASES = [
    ("equal hits: the shorter queue",
     {"a": (4, "GPU"), "b": (4, "GPU"), "c": (4, "GPU")}, {"a": 50, "b": 10, "c": 30},
     ["b", "c", "a"], 133 - 64),
    ("a full hit outweighs a queue shorter than what it saves, counted 2 + L",
     {"a": (8, "GPU")}, {"a": 250, "b": 0}, ["a", "b"], 5),
    ("...a busy fleet counts it more than an idle one (2 x 128 < 300 < (2 + L) x 128)",
     {"a": (8, "GPU")}, {"a": 300, "b": 0}, ["a", "b"], 5),
    ("...and loses to an idle replica once its queue is longer",
     {"a": (8, "GPU")}, {"a": 600, "b": 0}, ["b", "a"], 133),
    ("a CPU block saves 0.8 of its prefill: 8 CPU blocks beat 4 GPU blocks",
     {"a": (8, "CPU"), "b": (4, "GPU")}, {"a": 0, "b": 0}, ["a", "b"], 133 - 102.4),
    ("...unless the queue eats the difference",
     {"a": (8, "CPU"), "b": (4, "GPU")}, {"a": 130, "b": 0}, ["b", "a"], 69),
    ("storage saves half",
     {"a": (8, "STORAGE"), "b": (2, "GPU")}, {"a": 0, "b": 0}, ["a", "b"], 133 - 64),
    ("no holder: the least queued first (load-aware fallback)",
     {}, {"a": 5, "b": 0, "c": 5}, ["b"], 133),
]


@pytest.mark.parametrize(("case", "held", "loads", "expected", "need"), COST_CASES,
                         ids=[c[0] for c in COST_CASES])
def test_cost_model(case: str, held: dict[str, tuple[int, str]], loads: dict[str, float],
                    expected: list[str], need: float) -> None:
    index = make_index(*loads)
    for name, (blocks, medium) in held.items():
        store(index, name, ints(FINE[:blocks]), medium=medium)
    decisions = Router(index, load=lambda r: loads[r.name]).route(TOKENS)
    assert order(decisions)[:len(expected)] == expected
    top = decisions[0]
    mean = sum(loads.values()) / len(loads) / 133  # L: the mean queue, in requests
    assert top.utilization == pytest.approx(mean / (1 + mean))
    assert top.prefill_tokens == pytest.approx(need)
    assert top.cost == pytest.approx(loads[top.replica.name] + (2 + mean) * need)
    assert top.score == -top.cost
    assert top.load == loads[top.replica.name]
    assert top.prefill_tokens == pytest.approx(133 - top.weighted_hit_tokens)
    assert top.fallback is (not held)
    assert f"cost {top.cost:.6g} prefill tokens = {top.load:.6g} queued" in top.why
    if not held:
        assert "least queued first" in top.why


def test_load_in_requests_counts_the_mean_routed_prefill() -> None:
    index = make_index("a", "b")
    store(index, "a", ints(FINE[:8]))
    waiting = {"a": 0, "b": 1}
    router = Router(index, load=lambda r: waiting[r.name], load_unit="requests")
    # no mean yet: a queued request is worth this request's 133 tokens; the mean queue
    # is half a request (L = 0.5): the prefill needed counts 2.5 times
    first, second = router.route(TOKENS)
    assert (first.replica.name, first.load, first.cost) == ("a", 0, 12.5)
    assert (second.replica.name, second.load, second.cost) == ("b", 133, 133 + 2.5 * 133)
    assert router.mean_prefill_tokens == 5  # the first choice needed 5 tokens of prefill
    waiting["a"] = 60  # 300 tokens queued, L = 305 / 2 / 133: 300 + 5 (2 + L) < 5 + 133 (2 + L)
    assert order(router.route(TOKENS))[0] == "a"
    waiting["a"] = 120  # 600 tokens queued, L = 605 / 2 / 133: b (one request of 5) is cheaper
    assert order(router.route(TOKENS))[0] == "b"


def test_pushed_loads() -> None:
    index = make_index("a", "b")
    router = Router(index)
    router.set_load("a", 10)
    decisions = router.route(TOKENS)
    assert order(decisions) == ["b", "a"] and decisions[1].load == 10
    with pytest.raises(InvalidRequestError, match="load"):
        router.set_load("a", -1)


def test_without_load_the_router_counts_what_it_sent() -> None:
    names = [f"r{i}" for i in range(4)]
    index = make_index(*names)
    for name in names:
        store(index, name, ints(FINE[:1]))  # equal hits: the same decision every time
    router = Router(index)
    firsts = [router.route(TOKENS)[0].replica.name for _ in range(4)]
    assert sorted(firsts) == names  # each first choice queued work there
    assert router.route(TOKENS)[0].load is not None


def _shared_prefix_requests(count: int) -> list[list[int]]:
    """Requests sharing their first 2 blocks (a system prompt), each with its own 6 more."""
    return [[*TOKENS[:32], *range(50_000 + 1000 * i, 50_000 + 1000 * i + 101)]
            for i in range(count)]


def test_cache_pressure_spreads_what_only_shares_a_system_prompt() -> None:
    # Only "a" holds the shared 2 blocks. Without the pressure term every request
    # goes there (2 x (133 - 32) < 2 x 133) and b, c, d never store anything: their
    # caches stay empty while a's churns. A request reported sent to "a" raises its
    # pressure to 1: (2 + 1) x 101 > 2 x 133, so the next goes to a replica with room.
    index = make_index("a", "b", "c", "d")
    store(index, "a", ints(FINE[:2]))
    stateless = Router(index, load=lambda r: 0.0)  # no sends reported: pressure stays 0
    assert {order(stateless.route(t))[0] for t in _shared_prefix_requests(8)} == {"a"}
    router = Router(index, load=lambda r: 0.0)
    firsts = []
    for tokens in _shared_prefix_requests(8):
        top = router.route(tokens)[0]
        assert top.cost == pytest.approx(top.load + (2 + top.pressure) * top.prefill_tokens)
        assert f"(2 + {top.pressure:.3g}) x" in top.why
        router.sent(top)
        firsts.append(top.replica.name)
    assert firsts[0] == "a" and sorted(set(firsts)) == ["a", "b", "c", "d"]
    pressures = [router.pressure(name) for name in "abcd"]
    assert all(0 < p <= 1 for p in pressures) and max(pressures) == 1.0
    # Without a load the Router counts its first choices itself: the same spread.
    own = Router(index)
    assert len({order(own.route(t))[0] for t in _shared_prefix_requests(8)}) == 4


def test_cache_pressure_with_capacities_is_recent_tokens_over_capacity() -> None:
    # Capacities 1,000 and 3,000 tokens: the fleet's is 4,000. Each prompt sent counts
    # its tokens (held and new) on its replica, every count decaying by
    # exp(-tokens / 4,000) per prompt sent; the pressure is min(1, recent / capacity).
    index = make_index("a", "b")
    store(index, "a", ints(FINE[:2]))  # "a" holds the first 32 of the 133 tokens
    router = Router(index, load=lambda r: 0.0, cache_tokens={"a": 1000, ReplicaId("b"): 3000})
    first = router.route(TOKENS, ["a"])[0]
    assert (first.hit_tokens, first.prefill_tokens, first.pressure) == (32, 101.0, 0.0)
    router.sent(first)  # 133 tokens on "a": 32 reused, 101 stored
    assert router.pressure("a") == pytest.approx(133 / 1000) and router.pressure("b") == 0.0
    router.sent(router.route(list(range(9000, 9600)), ["b"])[0])  # 600 tokens on "b"
    assert router.pressure("a") == pytest.approx(133 * math.exp(-600 / 4000) / 1000)
    assert router.pressure("b") == pytest.approx(600 / 3000)
    # a: 2 x 101 + 0.114 x 101 = 213.5; b: 2 x 133 + 0.2 x 133 = 292.6
    a, b = router.route(TOKENS)
    assert (a.replica.name, b.replica.name) == ("a", "b")
    assert a.cost == pytest.approx((2 + 133 * math.exp(-0.15) / 1000) * 101)
    assert b.cost == pytest.approx(2.2 * 133) and b.pressure == pytest.approx(0.2)
    router.set_cache_tokens("b", 300)  # b's recent tokens now fill it twice: capped at 1
    assert router.pressure("b") == 1.0
    router.set_cache_tokens("b", None)  # b left: it counts the mean of those given (a's)
    assert router.pressure("b") == pytest.approx(600 / 1000)
    router.set_cache_tokens("a", None)  # none given: the relative pressure again
    assert router.pressure("b") == 1.0 and router.pressure("a") == pytest.approx(
        133 * math.exp(-0.15) / 600)
    router.set_cache_tokens("b", 300)
    for bad in (0, -1.0, math.nan, math.inf, True, "1000"):
        with pytest.raises(InvalidRequestError, match="cache_tokens"):
            router.set_cache_tokens("a", bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequestError, match="cache_tokens: for a"):
            Router(index, cache_tokens={"a": bad})  # type: ignore[dict-item]
    with pytest.raises(InvalidRequestError, match="cache_tokens: must be a mapping"):
        Router(index, cache_tokens=[("a", 1000)])  # type: ignore[arg-type]

    # Without a load the pressure stays relative (the Router's own count of its sends):
    # the replica it chose is the busiest, at 1, whatever its capacity.
    own = Router(index, cache_tokens={"a": 10**9, "b": 10**9})
    assert own.pressure(own.route(TOKENS)[0].replica) == 1.0
    own.set_load("a", 0.0)  # a pushed load: the capacities count, from a fresh count
    assert (own.pressure("a"), own.pressure("b")) == (0.0, 0.0)
    own.sent(own.route(TOKENS, ["b"])[0])
    assert own.pressure("b") == pytest.approx(133 / 10**9)


def test_sent_does_nothing_without_a_load() -> None:
    index = make_index("a", "b")
    router = Router(index)
    top = router.route(TOKENS)[0]  # counted by rank itself
    before = router.pressure(top.replica)
    router.sent(top)
    assert router.pressure(top.replica) == before == 1.0


def test_configured_replicas_are_candidates_before_any_event() -> None:
    index = PrefixIndex()  # empty: nothing registered yet
    router = Router(index, replicas=["a", "b", ReplicaId("c")], load=lambda r: 0.0)
    decisions = router.route(TOKENS)
    assert sorted(order(decisions)) == ["a", "b", "c"]
    assert decisions[0].fallback and decisions[0].cost == 2 * 133
    index.register("b", ReplicaScheme(H))
    store(index, "b", ints(FINE[:8]))
    assert order(router.route(TOKENS))[0] == "b"
    assert sorted(order(router.route(TOKENS, ["a", "b"]))) == ["a", "b"]
    with pytest.raises(InvalidRequestError, match="neither registered nor configured"):
        router.route(TOKENS, ["d"])


def test_equal_scores_without_load_are_ordered_by_rendezvous() -> None:
    index = make_index("a", "b", "c")
    for name in "abc":
        store(index, name, ints(FINE[:2]))
    first = order(Router(index).route(TOKENS))
    assert first == order(Router(index).route(TOKENS[:100]))


def test_rendezvous_fallback_is_stable() -> None:
    names = [f"r{i}" for i in range(8)]
    index = make_index(*names)
    router = Router(index, load=idle)
    decisions = router.route(TOKENS)
    assert all(d.fallback and d.hit_tokens == 0 for d in decisions)
    assert "rendezvous" in decisions[0].why
    winner = decisions[0].replica.name
    # same first block, different tails: same replica
    assert router.route([*TOKENS[:16], 7, 7, 7])[0].replica.name == winner
    # removing another candidate does not move the prefix
    others = [n for n in names if n != winner][1:]
    assert router.route(TOKENS, [winner, *others])[0].replica.name == winner
    # different prefixes spread over the replicas
    winners = {router.route([p, *TOKENS[1:]])[0].replica.name for p in range(40)}
    assert len(winners) >= 5


def test_rendezvous_for_prompts_shorter_than_a_block() -> None:
    index = make_index(*(f"r{i}" for i in range(8)))
    router = Router(index, load=idle)
    short = Request([5, 6, 7], cache_salt="tenant-1")
    winner = router.route(short)[0].replica
    assert router.route(Request([5, 6, 7], cache_salt="tenant-1"))[0].replica == winner
    spread = {router.route(Request([5, 6, 7], cache_salt=f"t{i}"))[0].replica for i in range(40)}
    assert len(spread) >= 5  # the salt is part of the digest


def test_short_prompts_with_ids_outside_uint64_are_routed() -> None:
    # The engine core hashes negative ids (vLLM before 0.28 lets them through).
    router = Router(make_index(*(f"r{i}" for i in range(8))), load=idle)
    spread = {router.route(Request([5, -i, 7]))[0].replica for i in range(1, 41)}
    assert len(spread) >= 5
    assert router.route(Request([5, -3, 7]))[0].replica == router.route(
        Request([5, -3, 7]))[0].replica


def test_rendezvous_weight_depends_on_rank() -> None:
    assert rendezvous_weight(b"k", ReplicaId("a", 0)) != rendezvous_weight(b"k", ReplicaId("a", 1))


def test_rendezvous_weight_is_the_xxh3_of_the_replica_seeded_by_the_affinity() -> None:
    # The definition routers on other hosts (and the docs) rely on: a change moves placements.
    seed = xxhash.xxh3_64_intdigest(b"affinity")
    assert rendezvous_weight(b"affinity", ReplicaId("gpu-a", 3)) == float(
        xxhash.xxh3_64_intdigest(b"\x00gpu-a\x003", seed))


def test_a_candidate_listed_twice_is_ranked_once() -> None:
    index = make_index("a", "b")
    store(index, "b", ints(FINE[:2]))
    decisions = Router(index).route(TOKENS, ["a", ReplicaId("b"), ReplicaId("a", 0), "b"])
    assert order(decisions) == ["b", "a"] and [d.rank for d in decisions] == [1, 2]


def test_hybrid_groups_must_all_hit() -> None:
    scheme = ReplicaScheme(H, groups=(GroupSpec(16), GroupSpec(32)))
    index = make_index("a", "b", scheme=scheme)
    coarse = group_block_hashes(FINE, 16, 32)
    store(index, "a", ints(FINE), group=0)
    store(index, "a", ints(coarse[:2]), group=1)       # group 1: 64 tokens
    store(index, "b", ints(FINE[:3]), group=0)          # group 0: 48 tokens
    store(index, "b", ints(coarse), group=1)
    decisions = {d.replica.name: d for d in Router(index).route(TOKENS)}
    assert decisions["a"].matched_blocks == (8, 2)
    assert decisions["a"].hit_tokens == 64
    assert decisions["b"].matched_blocks == (3, 4)
    assert decisions["b"].hit_tokens == 32              # 48 aligned down to lcm(16, 32)
    # the cap applies per group: 128 tokens, everything held -> 112 / 96 -> 96
    index.register("c", scheme)
    store(index, "c", ints(FINE), group=0)
    store(index, "c", ints(coarse), group=1)
    exact = {d.replica.name: d for d in Router(index).route(TOKENS[:128])}
    assert exact["c"].hit_tokens == 96 and "capped" in exact["c"].why
    assert exact["a"].hit_tokens == 64


def test_hybrid_bytes_keys_before_0_24_are_concatenated() -> None:
    h = Hasher(block_size=16, python_hash_seed="0", vllm_version="0.22.0")
    fine = h.block_hashes(TOKENS)
    scheme = ReplicaScheme(h, publishes="bytes", groups=(GroupSpec(16), GroupSpec(32)))
    keys = scheme.group_keys(fine)
    assert keys[1][0] == fine[0] + fine[1]  # type: ignore[operator]
    index = make_index("a", scheme=scheme)
    store(index, "a", list(keys[0]), group=0)
    store(index, "a", list(keys[1]), group=1)
    assert Router(index).route(TOKENS)[0].hit_tokens == 128
    # int events of both forms end with the last fine key's low 64 bits
    int_scheme = ReplicaScheme(h, groups=(GroupSpec(16), GroupSpec(32)))
    assert int_scheme.group_keys(fine)[1][0] == block_hash_to_int64(fine[1])  # type: ignore[arg-type]


def test_lookahead_keys_as_published() -> None:
    h = Hasher(block_size=16, python_hash_seed="0", vllm_version="0.33.0", lookahead=1)
    tokens = TOKENS[:64]
    keys = h.block_hashes(tokens)
    assert len(keys) == 3  # the 4th block has no lookahead token yet
    index = make_index("eagle", scheme=ReplicaScheme(h))
    index.register("plain", ReplicaScheme(H))
    store(index, "eagle", ints(keys))
    store(index, "plain", ints(keys))  # lookahead keys mean nothing to a plain replica
    decisions = Router(index).route(tokens)
    assert (decisions[0].replica.name, decisions[0].hit_tokens) == ("eagle", 48)
    assert decisions[1].hit_tokens == 0


def test_precomputed_keys_and_separate_hashing() -> None:
    index = make_index("a", "b")  # two replicas, one scheme: hashed once
    store(index, "a", ints(FINE[:2]))
    router = Router(index, load=idle)
    prepared = router.prepare(Request(TOKENS))
    assert len(prepared._schemes) == 1 and prepared.hash_seconds > 0
    assert router.rank(prepared)[0].hit_tokens == 32
    by_hand = PreparedRequest(len(TOKENS))
    by_hand.add_keys(index.scheme("a"), FINE)
    assert [d.replica for d in router.rank(by_hand)] == [d.replica for d in router.rank(prepared)]
    bare = PreparedRequest(len(TOKENS))
    with pytest.raises(InvalidRequestError):
        router.rank(bare)


def test_unknown_candidate_and_bad_weights() -> None:
    index = make_index("a")
    with pytest.raises(InvalidRequestError):
        Router(index).route(TOKENS, ["nope"])
    with pytest.raises(InvalidRequestError):
        Router(index, tier_weights={"GPU": 2.0})


def test_int_keys_are_published_form() -> None:
    scheme = ReplicaScheme(H)
    key: EventHash = scheme.publish(FINE[0])
    assert key == block_hash_to_int64(FINE[0])  # type: ignore[arg-type]
    assert ReplicaScheme(H, publishes="bytes").publish(FINE[0]) == FINE[0]
