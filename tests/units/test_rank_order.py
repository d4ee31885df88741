"""Router.rank's order, from its definition, and ``limit``.

The order is cost (lowest first, ``score = -cost``), then load (lower first), then
:func:`rendezvous_weight` on the request's affinity under the candidate's
scheme (higher first); when no candidate holds a block, rendezvous alone.
Rank groups candidates that share an outcome and computes weights only for
ties: here the expected order is computed the plain way, one candidate at a
time with the public :func:`rendezvous_weight`, over indexes full of ties
(random prefix lengths among few values), two schemes (each also as equal
copies), loads and none, and
the fallback. ``limit=k`` must give the first ``k`` decisions of the full
ranking.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import pytest

from prefixkey import Hasher, InvalidRequestError
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import (
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    RouteDecision,
    Router,
    rendezvous_weight,
)
from prefixkey.fleet.routing._prepared import affinity_of_key

TOKENS = list(range(2000, 2000 + 16 * 6 + 3))
SCHEMES = [ReplicaScheme(Hasher(block_size=16, python_hash_seed="0")),
           ReplicaScheme(Hasher(block_size=16, python_hash_seed="1"))]


def _index(rng: random.Random, replicas: int, held: bool, schemes: int = 2) -> PrefixIndex:
    index = PrefixIndex()
    for r in range(replicas):
        name, scheme = f"r{r}", SCHEMES[r % schemes]
        if r % 3 == 0:  # an equal scheme in another object: grouped with the shared one
            scheme = ReplicaScheme(scheme.hasher)
        index.register(name, scheme)
        keys = [scheme.publish(k) for k in scheme.hasher.block_hashes(TOKENS)]
        if held:
            n = rng.choice([0, 2, 2, 4, 6])
            index.apply(name, EventBatch(0.0, (BlockStored(tuple(keys[:n]), None, (), 16),)))
    return index


def _expected(router: Router, decisions: Sequence[RouteDecision]) -> list[ReplicaId]:
    prepared = router.prepare(TOKENS)
    schemes = router.index.replicas()

    def weight(d: RouteDecision) -> float:
        keys = prepared.keys_for(schemes[d.replica])
        held = d.matched_blocks[0]
        if not held:  # holding nothing: the first block key
            return rendezvous_weight(keys.affinity, d.replica)
        # a holder: the first key of the request it does not hold
        key = keys.groups[0][min(held, len(keys.groups[0]) - 1)]
        return rendezvous_weight(affinity_of_key(key), d.replica)

    return [d.replica for d in sorted(
        decisions, key=lambda d: (-d.score, d.load or 0.0, -weight(d)))]


@pytest.mark.parametrize("seed", range(16))
def test_rank_order_is_cost_load_then_rendezvous(seed: int) -> None:
    rng = random.Random(seed)
    held = seed % 4 != 3  # every fourth: nothing held, the fallback
    # From seed 12 on, 60-120 replicas: groups larger than the Router lists whole.
    index = _index(rng, rng.randint(1, 40) if seed < 12 else rng.randint(60, 120), held,
                   schemes=1 + seed % 2)
    loads = {ReplicaId(f"r{r}"): rng.choice([0.0, 16.0, 16.0, 80.0]) for r in range(120)}
    pushed = Router(index)
    for rid, value in loads.items():
        if rid in index.replicas():
            pushed.set_load(rid, value)
    for router in (Router(index, load=lambda r: 0.0), Router(index, load=loads.__getitem__),
                   pushed):
        decisions = router.route(TOKENS)
        assert [d.replica for d in decisions] == _expected(router, decisions)
        assert [d.rank for d in decisions] == list(range(1, len(decisions) + 1))
        assert decisions[0].fallback is not held
        for k in (1, 2, 5, len(decisions)):
            head = router.route(TOKENS, limit=k)
            assert head == decisions[:k]
            assert [d.why for d in head] == [d.why for d in decisions[:k]]


@pytest.mark.parametrize("seed", range(8))
def test_rank_order_with_cache_pressure(seed: int) -> None:
    """Reported sends give candidates different pressures: the cost is no longer the
    queue plus a group's shared part, so the queues' load order (the candidates holding
    nothing, and groups over 16) is only a bound; the order must still be the cost's."""
    rng = random.Random(100 + seed)
    held = seed % 4 != 3
    index = _index(rng, rng.randint(20, 40) if seed < 4 else rng.randint(60, 120), held,
                   schemes=1 + seed % 2)
    names = list(index.replicas())
    loads = {rid: rng.choice([0.0, 16.0, 80.0]) for rid in names}
    router = Router(index, load=loads.__getitem__)
    top = router.route(TOKENS)[0]
    mean = 0.0  # the running mean prefill of the sends reported (1/64 per report)
    for _ in range(rng.randint(1, 3 * len(names))):  # sends reported to random replicas
        tokens = float(rng.choice([3, 35, 99]))
        mean = mean + (tokens - mean) / 64 if mean else tokens
        router.sent(replace(top, replica=rng.choice(names), prefill_tokens=tokens))
    decisions = router.route(TOKENS)
    assert len({d.pressure for d in decisions}) > 1
    for d in decisions:
        assert d.pressure == router.pressure(d.replica)
        factor = 1 + 1 / (1 - d.utilization)  # 2 + L, L the mean queue in requests
        assert factor == pytest.approx(2 + sum(loads.values()) / len(loads) / mean)
        assert d.cost == pytest.approx(d.load + (factor + d.pressure) * d.prefill_tokens)
    assert [d.replica for d in decisions] == _expected(router, decisions)
    for k in (1, 2, 5, len(decisions)):
        assert router.route(TOKENS, limit=k) == decisions[:k]


@pytest.mark.parametrize("limit", [0, -1, 1.5, True])
def test_limit_must_be_a_positive_int(limit: object) -> None:
    router = Router(_index(random.Random(0), 2, True))
    with pytest.raises(InvalidRequestError, match="limit"):
        router.route(TOKENS, limit=limit)  # type: ignore[arg-type]
