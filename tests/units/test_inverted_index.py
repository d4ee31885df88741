"""The inverted layout: runs found by walking the keys once agree with the per-replica tables."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule
from index_events import batch, removed, stored
from test_index import H16, IndexMachine

from prefixkey.events import AllBlocksCleared, EventHash
from prefixkey.fleet import (
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    RunsAnswer,
    RunsQuery,
    UnknownReplicaError,
)
from prefixkey.fleet.index._walk import SlotMembers, runs_in_table

ORDERS: tuple[list[int], ...] = ([*range(8)], [3, 1, 0, 2, 7, 6, 5, 4], [])


def expected_run(index: PrefixIndex, name: str, group: int, keys: list[int],
                 media: int) -> tuple[tuple[int, int], ...]:
    """The run from the replica's own entries (not the holder sets longest_runs walks)."""
    bits = index.medium_bits()
    masks = {key: sum(bits[m] for m in held) for g, key, held in index.entries(name)
             if g == group}
    return runs_in_table(masks, keys, media)  # the table walk, not the holder sets


class RunsMachine(IndexMachine):
    """The index state machine, also checking every replica's run for a few key orders."""

    @rule(name=st.sampled_from(["a", "b"]))
    def remove_for_good(self, name: str) -> None:
        # Its slot is reused by the next registration: no holder bit may survive.
        self.index.remove_replica(name)
        self.index.register(name + "2", ReplicaScheme(H16))
        self.index.remove_replica(name + "2")
        self.index.register(name, ReplicaScheme(H16))
        for k in [k for k in self.model if k[0] == name]:
            del self.model[k]

    @invariant()
    def runs_match_tables(self) -> None:
        names = sorted(self.registered)
        for media in (0b111, 0b001, 0b101, 0b010):
            for group in (0, 1, 2):
                for keys in ORDERS:
                    got = self.index.longest_runs(names, group, keys, media)
                    assert got == [expected_run(self.index, n, group, keys, media)
                                   for n in names]


    @invariant()
    def answers_match_tables(self) -> None:
        # Every candidate in exactly one group, with its own run; a candidate the index
        # does not know holds nothing; an ordered answer is ordered as it promises.
        rids = (*(ReplicaId(n) for n in sorted(self.registered)), ReplicaId("ghost"))
        for media in (0b111, 0b001, 0b101):
            for keys in ORDERS:
                (answer,) = self.index.leading_runs(
                    [RunsQuery(ReplicaScheme(H16), rids, (tuple(keys),))], media)
                assert sum(len(members) for _, members in answer.groups) == len(rids)
                assert answer.by_replica() == {
                    rid: ((expected_run(self.index, rid.name, 0, keys, media)
                           if rid.name != "ghost" else ()),) for rid in rids}
                if answer.ordered:
                    check_ordered(answer)


def check_ordered(answer: RunsAnswer) -> None:
    runs = [result[0] for result, _ in answer.groups]  # type: ignore[index]
    assert all(len(run) <= 1 for run in runs)
    assert len({mask for run in runs for mask, _ in run}) <= 1
    lengths = [sum(n for _, n in run) for run in runs]
    assert lengths == sorted(set(lengths), reverse=True)


TestRunsMachine = RunsMachine.TestCase


def test_an_answer_does_not_change_with_the_index() -> None:
    # Members are listed when read, from the slots as they were when the keys were walked.
    index = PrefixIndex()
    for name in ("a", "b", "c"):
        index.register(name, ReplicaScheme(H16))
    index.apply("a", batch(stored(1, 2, 3)))
    index.apply("b", batch(stored(1, 2)))
    index.apply("c", batch(stored(1, 2)))
    query = RunsQuery(ReplicaScheme(H16), tuple(index.replicas()), ((1, 2, 3, 4),))
    (answer,) = index.leading_runs([query], 1)
    assert answer.ordered and len(answer.groups) == 2
    index.remove_replica("b")
    index.register("d", ReplicaScheme(H16))  # takes b's slot
    index.apply("d", batch(stored(1, 2, 3, 4)))
    assert [(result, list(members)) for result, members in answer.groups] == [
        ((((1, 3),),), [ReplicaId("a")]), ((((1, 2),),), [ReplicaId("b"), ReplicaId("c")])]
    check_ordered(answer)


def test_candidates_the_index_does_not_know_hold_nothing() -> None:
    index = PrefixIndex()
    index.register("a", ReplicaScheme(H16))
    index.apply("a", batch(stored(1, 2)))
    ghost = ReplicaId("ghost")
    for keys in ((1, 2), (7, 8)):
        (answer,) = index.leading_runs(
            [RunsQuery(ReplicaScheme(H16), (ghost, ReplicaId("a")), (keys,))], 1)
        assert answer.by_replica() == {
            ghost: ((),), ReplicaId("a"): (((1, 2),),) if keys == (1, 2) else ((),)}
        assert [len(members) for _, members in answer.groups] == (
            [1, 1] if keys == (1, 2) else [2])


def test_unknown_replica_in_longest_runs() -> None:
    index = PrefixIndex()
    with pytest.raises(UnknownReplicaError):
        index.longest_runs(["ghost"], 0, [1], 1)


def test_eviction_after_many_deletions_keeps_lru_order() -> None:
    # Enough removals at the front of the table that eviction compacts it first.
    index = PrefixIndex(max_entries=4000)
    index.register("a", ReplicaScheme(H16))
    index.register("b", ReplicaScheme(H16))
    index.apply("b", batch(stored(1, 2, 3)))
    for key in range(4000 - 3):
        index.apply("a", batch(stored(key)))
    index.apply("a", batch(removed(*range(2500))))
    index.apply("a", batch(*(stored(10_000 + k) for k in range(2500 + 2))))
    assert index.stats()["evictions"] == 2
    kept = [key for _, key, _ in index.entries("a")]
    assert kept == [*range(2502, 3997), *range(10_000, 12_502)]
    assert index.longest_runs(["a", "b"], 0, [2501], 1) == [(), ()]
    assert index.longest_runs(["a", "b"], 0, [2502, 2503], 1) == [((1, 2),), ()]
    assert index.longest_runs(["b", "a"], 0, [1, 2, 3], 1) == [((1, 3),), ()]


def test_replicas_on_other_schemes_do_not_share_runs() -> None:
    # Equal published keys from replicas of another scheme: each is asked for its own.
    index = PrefixIndex()
    index.register("a", ReplicaScheme(H16))
    index.register(ReplicaId("a", 1), ReplicaScheme(H16))
    index.apply("a", batch(stored(5, 6, 7)))
    index.apply(ReplicaId("a", 1), batch(stored(5, 6), stored(7, medium="CPU")))
    runs = index.longest_runs(["a", ReplicaId("a", 1)], 0, [5, 6, 7, 8], 0b11)
    assert runs == [((1, 3),), ((1, 2), (2, 1))]
    assert index.longest_runs([ReplicaId("a", 1)], 0, [5, 6, 7], 0b01) == [((1, 2),)]


@pytest.mark.parametrize("holders", [1, 16])
def test_memory_per_entry(holders: int) -> None:
    """At most 150 bytes per (block, replica) entry (tracemalloc; the benchmark does 1M)."""
    entries = 100_000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = PrefixIndex()
        for r in range(16):
            index.register(f"r{r}", ReplicaScheme(H16))
        for r in range(16):
            # Fresh int objects per replica, as decoded events carry them.
            if holders == 1:
                keys: list[EventHash] = [r * entries + k for k in range(entries // 16)]
            else:
                keys = [int(str(k)) for k in range(entries // 16)]
            for start in range(0, len(keys), 64):
                index.apply(f"r{r}", batch(stored(*keys[start:start + 64])))
            del keys
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(index) == entries
    assert used / entries <= 150


@pytest.mark.parametrize("mask", [0, 1, 0b1011, (1 << 1023) | 5, (1 << 1024) - 1,
                                  int("10" * 512, 2), 1 << 700])
def test_slot_members_list_the_mask_in_slot_order(mask: int) -> None:
    # Dense masks are listed through their binary digits, sparse ones bit by bit: both
    # must give the replicas of the set bits, lowest slot first, then the extra ones.
    slots = [ReplicaId(f"r{i}") for i in range(1024)]
    extra = (ReplicaId("ghost"),)
    members = SlotMembers(mask, slots, extra)
    expected = [slots[i] for i in range(1024) if mask >> i & 1] + list(extra)
    assert len(members) == len(expected)
    assert list(members) == expected and members[-1] == extra[0]
    assert members[:2] == expected[:2]


@pytest.mark.parametrize("length", [3, 40])  # a store key by key, and one in bulk
def test_a_run_of_equal_holder_sets_is_one_object(length: int) -> None:
    # A walk reads each key's holder set: equal sets along a chain are one int object, so
    # a run of them is one cache line (ROUTING.md). Replicas in slots 9 and up: their
    # masks are not among the small ints Python shares anyway.
    index = PrefixIndex()
    names = [f"r{i}" for i in range(12)]
    for name in names:
        index.register(name, ReplicaScheme(H16))
    chain = [10_000 + i for i in range(length)]
    half = length // 2
    steps = [("r9", stored(*chain)), ("r10", stored(*chain)), ("r11", stored(*chain[:half])),
             ("r10", removed(*chain)), ("r8", stored(*chain)), ("r9", AllBlocksCleared())]
    # After each step: the runs of keys whose holder sets must be one object.
    halves = [chain[:half], chain[half:]]
    runs = [[chain], [chain], halves, halves, halves, halves]
    masks = [[1 << 9], [1 << 9 | 1 << 10], [1 << 9 | 1 << 10 | 1 << 11, 1 << 9 | 1 << 10],
             [1 << 9 | 1 << 11, 1 << 9], [1 << 8 | 1 << 9 | 1 << 11, 1 << 8 | 1 << 9],
             [1 << 8 | 1 << 11, 1 << 8]]
    for (name, event), expected, values in zip(steps, runs, masks, strict=True):
        index.apply(name, batch(event))
        holders = index._maps(0, 1)[0][1]
        for run, value in zip(expected, values, strict=True):
            assert [holders[key] for key in run] == [value] * len(run)
            assert len({id(holders[key]) for key in run}) == 1
