"""The ranking Router.rank returns is read lazily but fixed when rank returns.

The expected values are the eagerly read ranking itself (``list(...)``) and
the index's own state: a later apply, or reading in another order, must not
change what a ranking says, and ties past what is read are never sorted.
"""

from __future__ import annotations

import random
import threading

import pytest

from prefixkey import Hasher
from prefixkey.events import AllBlocksCleared, BlockStored, EventBatch
from prefixkey.fleet import PrefixIndex, ReplicaScheme, Router
from prefixkey.fleet.routing._ranking import LazyRanking

SCHEME = ReplicaScheme(Hasher(block_size=16, python_hash_seed="0"))
TOKENS = list(range(5000, 5000 + 16 * 8 + 1))


def _index(replicas: int, seed: int) -> PrefixIndex:
    rng = random.Random(seed)
    keys = [SCHEME.publish(k) for k in SCHEME.hasher.block_hashes(TOKENS)]
    index = PrefixIndex()
    for r in range(replicas):
        index.register(f"r{r}", SCHEME)
        n = rng.choice([0, 2, 5, 8])
        index.apply(f"r{r}", EventBatch(0.0, (BlockStored(tuple(keys[:n]), None, (), 16),)))
    return index


@pytest.mark.parametrize("seed", range(6))
def test_any_read_order_gives_the_same_decisions(seed: int) -> None:
    router = Router(_index(30, seed), load=lambda r: 0.0)
    full = list(router.route(TOKENS))
    ranking = router.route(TOKENS)
    picks = list(range(len(full)))
    random.Random(seed).shuffle(picks)
    assert [ranking[i] for i in picks] == [full[i] for i in picks]
    assert ranking == full and full == ranking and ranking == router.route(TOKENS)
    assert ranking[-1] == full[-1] and ranking[2:7] == full[2:7]
    assert [d.why for d in ranking] == [d.why for d in full]
    with pytest.raises(IndexError):
        ranking[len(full)]


def test_a_ranking_does_not_follow_the_index_after_rank() -> None:
    index = _index(20, 1)
    router = Router(index, load=lambda r: 0.0)
    before = list(router.route(TOKENS))
    ranking = router.route(TOKENS)  # nothing read yet but the head
    for r in range(20):
        index.apply(f"r{r}", EventBatch(1.0, (AllBlocksCleared(),)))
    assert list(ranking) == before
    assert list(router.route(TOKENS)) != before  # the index did change: everyone falls back


def test_ties_past_what_is_read_are_not_sorted() -> None:
    calls: list[int] = []

    def tie_order(group: list[int]) -> list[int]:
        calls.extend(group)
        return sorted(group, reverse=True)

    groups = iter([[0, 1, 2], [3, 4, 5, 6]])
    ranking = LazyRanking(groups, 7, tie_order, lambda i, rank: (i, rank))
    assert ranking[0] == (2, 1)
    assert sorted(calls) == [0, 1, 2]
    assert list(ranking) == [(2, 1), (1, 2), (0, 3), (6, 4), (5, 5), (4, 6), (3, 7)]
    assert sorted(calls) == list(range(7))


def test_concurrent_readers_see_one_ranking() -> None:
    router = Router(_index(200, 2), load=lambda r: 0.0)
    full = list(router.route(TOKENS))
    ranking = router.route(TOKENS)
    seen: list[list[object]] = []

    def read() -> None:
        seen.append(list(reversed([ranking[i] for i in reversed(range(len(ranking)))])))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [full] * 4
