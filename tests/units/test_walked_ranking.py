"""The in-memory index's ordered answers are ranked from the walk itself: the same decisions.

:class:`~prefixkey.fleet.Router` reads an ordered answer of the in-memory
index from its walk (``OrderedGroups.walked``: no group object per group, the
loads read from the queues' stored values, the next groups opened while
their bounds come first). The same answers handed over as a plain list of
groups take the general path; both Routers must give equal rankings,
decision by decision with their explanations, over random fleets (groups
larger than the Router lists whole, several media, two schemes, candidate
subsets), every load mode, reported sends (cache pressure), loads pushed
between a ranking and the reading of its tail, and replicas removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefixkey import Hasher
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import (
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    RouteDecision,
    Router,
    RunsAnswer,
    RunsQuery,
)
from prefixkey.fleet.routing import _cost_order as impl

SCHEMES = [ReplicaScheme(Hasher(block_size=4, python_hash_seed="0")),
           ReplicaScheme(Hasher(block_size=4, python_hash_seed="1"))]
PROMPT = list(range(100, 160))  # 15 blocks
MODES = ["own", "pushed", "callable", "requests"]


class Listed:
    """``index``'s answers with their groups as plain lists: the Router's general path."""

    def __init__(self, index: PrefixIndex) -> None:
        self.index = index

    def replicas(self) -> object:
        return self.index.replicas()

    def medium_bits(self) -> dict[str, int]:
        return self.index.medium_bits()

    def leading_runs(self, queries: Sequence[RunsQuery], media: int) -> list[RunsAnswer]:
        return [RunsAnswer(list(a.groups), a.ordered)
                for a in self.index.leading_runs(queries, media)]


@st.composite
def fleets(draw: st.DrawFn) -> tuple[PrefixIndex, list[ReplicaId], dict[ReplicaId, float]]:
    index = PrefixIndex()
    two = draw(st.booleans())
    # Few distinct run lengths among up to 60 replicas: groups of more than 16 members.
    lengths = draw(st.sampled_from([[0, 15], [3, 7, 15], list(range(16))]))
    media: list[str | None] = draw(st.sampled_from([[None], [None, "CPU"]]))
    loads: dict[ReplicaId, float] = {}
    names = []
    for r in range(draw(st.integers(1, 60))):
        scheme = SCHEMES[r % 2] if two else SCHEMES[0]
        rid = index.register(f"r{r}", scheme)
        names.append(rid)
        keys = [scheme.publish(k) for k in scheme.hasher.block_hashes(PROMPT)]
        held = draw(st.sampled_from(lengths))
        if held:
            index.apply(rid, EventBatch(0.0, (BlockStored(
                tuple(keys[:held]), None, (), 4, medium=draw(st.sampled_from(media))),)))
        loads[rid] = float(draw(st.sampled_from([0, 0, 8, 20, 60, 200])))
    return index, names, loads


def _router(index: object, mode: str, loads: dict[ReplicaId, float]) -> Router:
    if mode == "callable":
        return Router(index, load=loads.__getitem__)  # type: ignore[arg-type]
    if mode == "requests":
        return Router(index, load=loads.__getitem__,  # type: ignore[arg-type]
                      load_unit="requests")
    router = Router(index)  # type: ignore[arg-type]
    if mode == "pushed":
        for rid, value in loads.items():
            router.set_load(rid, value)
    return router


def _read(ranking: Sequence[RouteDecision]) -> list[tuple[RouteDecision, str]]:
    return [(d, d.why) for d in ranking]


@settings(max_examples=60, deadline=None)
@given(fleet=fleets(), mode=st.sampled_from(MODES),
       calls=st.lists(st.tuples(st.integers(1, 60), st.booleans(), st.integers(0, 59),
                                st.sampled_from(["none", "push", "remove"])),
                      min_size=1, max_size=6))
def test_a_walked_answer_ranks_as_its_listed_groups(
        fleet: tuple[PrefixIndex, list[ReplicaId], dict[ReplicaId, float]], mode: str,
        calls: list[tuple[int, bool, int, str]]) -> None:
    index, _, loads = fleet
    walked, listed = _router(index, mode, loads), _router(Listed(index), mode, loads)
    for tokens, subset, pick, between in calls:
        alive = list(index.replicas())
        candidates = alive[::2] if subset and len(alive) > 1 else None
        prompt = PROMPT[:tokens]
        a = walked.rank(walked.prepare(prompt, candidates), candidates)
        b = listed.rank(listed.prepare(prompt, candidates), candidates)
        head = len(a) // 2
        assert _read(a[:head]) == _read(b[:head])
        rid = alive[pick % len(alive)]
        if between == "push":  # the tail is read after a load moved
            walked.set_load(rid, 500.0)
            listed.set_load(rid, 500.0)
        assert _read(a) == _read(b)
        if mode != "own":
            moved = replace(a[0], replica=rid)
            walked.sent(moved)
            listed.sent(moved)
        if between == "remove" and len(alive) > 1:
            index.remove_replica(rid)


def test_the_walked_path_is_taken() -> None:
    index = PrefixIndex()
    keys = [SCHEMES[0].publish(k) for k in SCHEMES[0].hasher.block_hashes(PROMPT)]
    for r in range(20):
        index.register(f"r{r}", SCHEMES[0])
        index.apply(f"r{r}", EventBatch(0.0, (BlockStored(
            tuple(keys[:r % 15]), None, (), 4),)))
    router = Router(index)
    for r in range(20):
        router.set_load(f"r{r}", float(r))
    opened = []
    real = impl._CostOrder._open_walked

    def spy(self: impl._CostOrder, walked: impl._Walked) -> None:
        opened.append(walked.at)
        real(self, walked)

    impl._CostOrder._open_walked = spy  # type: ignore[method-assign]
    try:
        # read to its head (a top-1 ranking, limit=1, takes the one-pass path: _top1)
        best = router.rank(router.prepare(PROMPT))[0]
    finally:
        impl._CostOrder._open_walked = real  # type: ignore[method-assign]
    assert opened
    full = Router(Listed(index))  # type: ignore[arg-type]
    for r in range(20):
        full.set_load(f"r{r}", float(r))
    assert best == full.rank(full.prepare(PROMPT))[0]
    # cost = load + (1 + 1 / (1 - utilization) + pressure) x prefill tokens, the bound's
    # arithmetic (the walk's) against the decision's own (its outcome's hit)
    twice = 1 + 1 / (1 - best.utilization)
    assert best.cost == pytest.approx(best.load + (twice + best.pressure) * best.prefill_tokens,
                                      rel=1e-12)
    assert best.hit_tokens == 56 and best.replica == ReplicaId("r14")


@pytest.mark.parametrize("mode", MODES)
def test_decayed_and_pushed_queues_are_read_alike(mode: str) -> None:
    # The Router's own estimate decays every queue per decision (stored values over a
    # scale), a pushed load moves one: the walked groups must read them as the queues do.
    index = PrefixIndex()
    keys = [SCHEMES[0].publish(k) for k in SCHEMES[0].hasher.block_hashes(PROMPT)]
    loads = {}
    for r in range(12):
        rid = index.register(f"r{r}", SCHEMES[0])
        index.apply(rid, EventBatch(0.0, (BlockStored(tuple(keys[:r]), None, (), 4),)))
        loads[rid] = float(r % 5 * 7)
    walked, listed = _router(index, mode, loads), _router(Listed(index), mode, loads)
    for call in range(5):
        a, b = walked.rank(walked.prepare(PROMPT)), listed.rank(listed.prepare(PROMPT))
        assert _read(a) == _read(b)
        if mode == "pushed":
            walked.set_load("r11", 3.0 * call)
            listed.set_load("r11", 3.0 * call)
        elif mode != "own":
            walked.sent(a[0])
            listed.sent(b[0])
    assert any(d.load for d in a)
