"""Interned holder sets: keys held by more replicas than fit inline (fleet._redis_holders).

The other Redis index tests mostly hold a key on a few replicas (inline sets);
here 24 replicas share prompts, so most holder sets are interned records, and
ranking reuses the changes it kept ({ns}:diffs). The in-memory index is the
oracle where it has the same semantics (no bound); under a per-replica bound
(Redis only) a replica's ``entries`` (its recency set) are the oracle of what
ranking finds. After every stream the records must be exact: one per distinct
large set in use, named by its sha1, counted once per key referring to it.
"""

from __future__ import annotations

import hashlib
import random
from itertools import pairwise
from typing import Any

import pytest
from index_events import batch, held, removed, stored
from redis_servers import flushed_client

from prefixkey import Hasher
from prefixkey.events import AllBlocksCleared
from prefixkey.fleet import (
    DEFAULT_TIER_WEIGHTS,
    PrefixIndex,
    PrefixIndexBackend,
    RedisPrefixIndex,
    ReplicaId,
    ReplicaScheme,
    Router,
    RunsAnswer,
    RunsQuery,
    RunsResult,
)
from prefixkey.fleet.index import _redis_lua as lua
from prefixkey.fleet.index._redis_holders import INLINE_TOKENS
from prefixkey.fleet.index._walk import runs_in_table

H16 = Hasher(block_size=16, python_hash_seed="0")
OLD = Hasher(block_size=16, python_hash_seed="0", vllm_version="0.30.0")
NAMES = [f"r{i}" for i in range(24)]


client = pytest.fixture(flushed_client, name="client")


def runs_of(answers: list[RunsAnswer]) -> list[dict[ReplicaId, RunsResult]]:
    """Each answer's candidates and their runs (groups aside: backends group differently)."""
    return [answer.by_replica() for answer in answers]


def _scheme(name: str) -> ReplicaScheme:
    return ReplicaScheme(H16, publishes="bytes" if name in ("r5", "r6") else "int")


def _stream(index: PrefixIndexBackend, seed: int, steps: int) -> list[list[int]]:
    """24 replicas storing and removing prefixes of 3 prompts, some clears and re-registrations."""
    for name in NAMES:
        index.register(name, _scheme(name))
    rng = random.Random(seed)
    prompts = [[rng.randrange(50_000) for _ in range(16 * 40 + 7)] for _ in range(3)]
    keys = [H16.block_hashes(p) for p in prompts]
    for step in range(steps):
        name = rng.choice(NAMES)
        chain = rng.choice(keys)
        depth = rng.randint(0, len(chain))
        medium = rng.choice([None, None, "CPU", "STORAGE"])
        r = rng.random()
        if r < 0.75:
            event: Any = stored(*chain[:depth], medium=medium)
        elif r < 0.95:
            event = removed(*chain[depth:depth + rng.randint(1, 8)], medium=medium)
        elif r < 0.98:
            event = AllBlocksCleared()
        else:  # a new scheme (its entries dropped), then back
            index.register(name, ReplicaScheme(OLD))
            index.register(name, _scheme(name))
            continue
        index.apply(name, batch(event, ts=float(step)))
    return prompts


def _check_records(client: Any, ns: str, long_inline: bool = False) -> int:
    """The interned records are exact; return how many there are (``long_inline``:
    inline sets may be long, as the layout before interning wrote them)."""
    refs: dict[bytes, int] = {}
    for key in client.scan_iter(match=f"{{{ns}}}:h:*"):
        for v in client.hvals(key):
            if len(v) % 6:
                refs[v] = refs.get(v, 0) + 1
            else:  # inline: small sets only
                assert len(v) > 0 and (long_inline or len(v) <= INLINE_TOKENS * 6)
    counts = {k: int(n) for k, n in client.hgetall(f"{{{ns}}}:refs").items()}
    sets = client.hgetall(f"{{{ns}}}:sets")
    assert counts == refs and set(sets) == set(refs)
    for v, h in sets.items():
        assert v == b"@" + hashlib.sha1(h).hexdigest().encode()
        assert len(h) % 6 == 0 and len(h) > INLINE_TOKENS * 6
        tokens = [h[i:i + 6] for i in range(0, len(h), 6)]
        assert tokens == sorted(set(tokens))  # big-endian: byte order is numeric order
    return len(sets)


def _runs_from_entries(index: RedisPrefixIndex, rid: ReplicaId, keys: list[Any],
                       media: int) -> tuple[tuple[int, int], ...]:
    """A replica's leading run over ``keys`` computed from its entries (its recency set)."""
    bits = index.medium_bits()
    masks = {k: sum(bits[m] for m in ms) for g, k, ms in index.entries(rid) if g == 0}
    return runs_in_table(masks, keys, media)


@pytest.mark.parametrize("seed", range(3))
def test_interned_sets_rank_as_in_memory(client: Any, seed: int) -> None:
    memory = PrefixIndex()
    shared = RedisPrefixIndex(client, namespace=f"many{seed}", sweep_every=5)
    prompts = _stream(memory, seed, 300)
    assert _stream(shared, seed, 300) == prompts
    assert memory.stats() == shared.stats()
    for name in NAMES:
        assert held(memory, name) == held(shared, name)
    assert _check_records(client, f"many{seed}") > 0  # the test exercises interning
    for _ in range(2):  # the second time, with the changes kept by the first
        for tokens in [*prompts, prompts[0][:100], [t + 1 for t in prompts[1]]]:
            for tiers in (DEFAULT_TIER_WEIGHTS, {"GPU": 1.0, "CPU": 0.0, "STORAGE": 0.5}):
                assert Router(shared, tier_weights=tiers).route(tokens) == Router(
                    memory, tier_weights=tiers).route(tokens)
            for media in (1, 2, 4, 1 | 4, 7):
                queries = [RunsQuery(_scheme(n), (ReplicaId(n),),
                                     tuple(_scheme(n).group_keys(
                                         _scheme(n).hasher.block_hashes(tokens))))
                           for n in ("r0", "r5")]
                assert runs_of(shared.leading_runs(queries, media)) == runs_of(
                    memory.leading_runs(queries, media))
    assert client.hlen(f"{{many{seed}}}:diffs") > 0
    while shared.sweep(budget=64):
        pass
    _check_records(client, f"many{seed}")


def test_interned_sets_under_the_per_replica_bound(client: Any) -> None:
    index = RedisPrefixIndex(client, namespace="bound", max_entries=25, sweep_every=3)
    prompts = _stream(index, 7, 400)
    assert index.stats()["evictions"] > 0
    for name in NAMES:
        assert index.replica_size(name) <= 25
    _check_records(client, "bound")
    rids = [ReplicaId(n) for n in NAMES if n not in ("r5", "r6")]
    scheme = ReplicaScheme(H16)
    for tokens in prompts:
        keys = list(scheme.group_keys(H16.block_hashes(tokens))[0])  # published: ints
        for media in (1, 7):
            (answer,) = index.leading_runs([RunsQuery(scheme, tuple(rids), (tuple(keys),))],
                                           media)
            assert answer.by_replica() == {
                rid: (_runs_from_entries(index, rid, keys, media),) for rid in rids}
    while index.sweep(budget=64):
        pass
    _check_records(client, "bound")


def test_kept_changes_are_bounded(client: Any) -> None:
    index = RedisPrefixIndex(client, namespace="kept", sweep_every=0)
    prompts = _stream(index, 1, 300)
    expected = [Router(index).route(t) for t in prompts]
    client.unlink("{kept}:diffs")
    # the same script with room for 5 kept changes instead of DIFFS_KEPT
    script = lua.RANK.replace(f") >= {lua.DIFFS_KEPT} then", ") >= 5 then")
    assert script != lua.RANK
    index._scripts["rank"] = client.register_script(script)
    sizes = []
    for _ in range(3):
        for tokens, decisions in zip(prompts, expected, strict=True):
            assert Router(index).route(tokens) == decisions
            sizes.append(client.hlen("{kept}:diffs"))
    assert max(sizes) > 5 and any(b < a for a, b in pairwise(sizes))  # dropped, then refilled


def test_long_inline_sets_of_the_previous_layout_read_the_same(client: Any) -> None:
    """Before interning every set was inline: such a field ranks the same, and the next
    change to it interns it."""
    old, new = (RedisPrefixIndex(client, namespace=ns, sweep_every=0) for ns in ("old", "new"))
    chain = H16.block_hashes(list(range(16 * 4)))
    for index in (old, new):
        for name in NAMES[:12]:
            index.register(name, ReplicaScheme(H16))
            index.apply(name, batch(stored(*chain)))
    for key, value in client.hgetall("{old}:h:0").items():  # as the previous layout wrote
        tokens = client.hget("{old}:sets", value)
        assert tokens is not None and len(tokens) == 12 * 6
        client.hset("{old}:h:0", key, tokens)
    client.delete("{old}:sets", "{old}:refs")
    queries = [RunsQuery(ReplicaScheme(H16), tuple(ReplicaId(n) for n in NAMES[:12]),
                         tuple(ReplicaScheme(H16).group_keys(chain)))]
    for media in (1, 7):
        assert runs_of(old.leading_runs(queries, media)) == runs_of(
            new.leading_runs(queries, media))
    for index in (old, new):
        index.apply("r3", batch(removed(*chain[2:])))
    assert runs_of(old.leading_runs(queries, 1)) == runs_of(new.leading_runs(queries, 1))
    assert held(old, "r3") == held(new, "r3")
    kinds = sorted(len(v) for v in client.hvals("{old}:h:0"))
    assert kinds == [41, 41, 72, 72]  # the two keys r3 left are interned, two still inline
    assert _check_records(client, "old", long_inline=True) == 1
    assert _check_records(client, "new") == 2
