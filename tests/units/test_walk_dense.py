"""The leading-run walk: its ends, key by key, also when it finishes in C.

:func:`walk` hands the rest of a walk to ``_dense_walk`` once the holder set
has changed at most keys (many replicas, each with its own run length); the
ends must be those of the plain definition, one key at a time: holder sets
that are not nested, keys missing or held by none of the candidates, empty
masks, candidates that are a subset of the holders. A top-1 ranking reads the
same ends longest first from the walk's running AND (:func:`prefix_ands`,
:func:`runs_back`), and ``PrefixIndex._prefix_walk`` must be the walk
``leading_runs`` answers with.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from prefixkey import Hasher
from prefixkey.events import BlockStored, EventBatch, EventHash
from prefixkey.fleet import PrefixIndex, ReplicaId, ReplicaScheme, RunsQuery
from prefixkey.fleet.index import _walk
from prefixkey.fleet.index._walk import OrderedGroups, PrefixWalk, prefix_ands, runs_back, walk

SCHEME = ReplicaScheme(Hasher(block_size=4, python_hash_seed="0"))


def plain_walk(holders: dict[EventHash, int], keys: list[EventHash],
               alive: int) -> list[tuple[int, int]]:
    """Where each candidate's run ends, one key at a time."""
    ends = []
    for i, key in enumerate(keys):
        still = alive & holders.get(key, 0)
        if still != alive:
            ends.append((i, alive ^ still))
            alive = still
        if not alive:
            return ends
    if alive:
        ends.append((len(keys), alive))
    return ends


@st.composite
def walks(draw: st.DrawFn) -> tuple[dict[EventHash, int], list[EventHash], int]:
    replicas = draw(st.integers(1, 200))
    nkeys = draw(st.integers(0, 120))
    keys: list[EventHash] = list(range(1000, 1000 + nkeys))
    # Each replica holds a prefix of its own length (most walks change at most keys),
    # then a few holder sets are disturbed: not nested, missing, or empty.
    lengths = [draw(st.integers(0, nkeys)) for _ in range(replicas)]
    holders: dict[EventHash, int] = {}
    for r, n in enumerate(lengths):
        for key in keys[:n]:
            holders[key] = holders.get(key, 0) | 1 << r
    for _ in range(draw(st.integers(0, 4))):
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        change = draw(st.sampled_from(["drop", "empty", "extra", "flip"]))
        if change == "drop":
            holders.pop(key, None)
        elif change == "empty":
            holders[key] = 0
        elif change == "extra":  # a replica holds a later key without the earlier ones
            holders[key] = holders.get(key, 0) | 1 << draw(st.integers(0, replicas - 1))
        else:
            holders[key] = holders.get(key, 0) ^ 1 << draw(st.integers(0, replicas - 1))
    everyone = (1 << replicas) - 1
    alive = draw(st.sampled_from([everyone, everyone & 0x5555_5555_5555_5555_5555,
                                  everyone >> 1, 1]))
    return holders, keys, alive


@settings(max_examples=300, deadline=None)
@given(case=walks())
def test_walk_ends_are_the_plain_walks(
        case: tuple[dict[EventHash, int], list[EventHash], int]) -> None:
    holders, keys, alive = case
    assert walk(holders, keys, alive) == plain_walk(holders, keys, alive)


@settings(max_examples=300, deadline=None)
@given(case=walks())
def test_runs_read_back_from_the_running_and_are_the_plain_walks(
        case: tuple[dict[EventHash, int], list[EventHash], int]) -> None:
    holders, keys, alive = case
    ands = prefix_ands(holders, keys, alive)
    assert list(runs_back(ands)) == plain_walk(holders, keys, alive)[::-1]
    assert all(a >= b for a, b in pairwise(ands))  # what runs_back bisects
    slots = [ReplicaId(f"r{i}") for i in range(alive.bit_length())]
    assert (_listed(PrefixWalk(ands, 1, slots, ()).groups())
            == _listed(OrderedGroups(walk(holders, keys, alive), 1, slots)))


def _listed(groups: Sequence[tuple[object, Sequence[ReplicaId]]]) -> list[tuple[object, list[
        ReplicaId]]]:
    return [(runs, list(members)) for runs, members in groups]


@settings(max_examples=100, deadline=None)
@given(held=st.lists(st.integers(0, 12), min_size=1, max_size=40), subset=st.booleans(),
       cpu=st.booleans(), tokens=st.integers(0, 52))
def test_the_index_walks_a_top1_query_as_it_answers_it(
        held: list[int], subset: bool, cpu: bool, tokens: int) -> None:
    index = PrefixIndex()
    keys = [SCHEME.publish(k) for k in SCHEME.hasher.block_hashes(list(range(52)))]
    for r, n in enumerate(held):
        index.register(f"r{r}", SCHEME)
        if n:
            index.apply(f"r{r}", EventBatch(0.0, (BlockStored(
                tuple(keys[:n]), None, (), 4, medium="CPU" if cpu and r % 3 == 0 else None),)))
    replicas = tuple(index.replicas())
    query = RunsQuery(SCHEME, (*replicas[::2], ReplicaId("gone")) if subset else replicas,
                      (tuple(keys[:tokens // 4]),))
    found = index._prefix_walk(query.replicas, query.groups, 0b111)
    answer, = index.leading_runs([query], 0b111)
    if found is None:  # no medium, or two, held: not one walk
        assert not answer.ordered and (cpu or not any(held))
    else:
        assert answer.ordered and _listed(found.groups()) == _listed(answer.groups)


def test_a_dense_walk_finishes_in_c_with_the_same_ends() -> None:
    # 300 replicas, each a run of its own length: the holder set changes at every key.
    keys: list[EventHash] = list(range(300))
    holders: dict[EventHash, int] = {key: sum(1 << r for r in range(key + 1, 300))
                                     for key in range(300)}
    holders[200] |= 1 << 5  # not nested: replica 5 holds key 200 again, its run ended at 5
    calls = []
    dense = _walk._dense_walk

    def spy(holders: dict[EventHash, int], keys: list[EventHash], walked: int,
            alive: int) -> list[tuple[int, int]]:
        calls.append(walked)
        return dense(holders, keys, walked, alive)

    _walk._dense_walk = spy  # type: ignore[assignment]
    try:
        got = walk(holders, keys, (1 << 300) - 1)
    finally:
        _walk._dense_walk = dense
    assert calls, "the walk did not finish in C"
    assert got == plain_walk(holders, keys, (1 << 300) - 1)
    assert got[0] == (0, 1) and got[-1] == (299, 1 << 299)
