"""A top-1 ranking of a walked answer is found in one pass: the general path's head.

``Router.rank(prepared, limit=1)`` over the in-memory index, with the loads the
Router keeps (pushed, in tokens or requests, or its own estimate), reads the
walk's ends and the queues once (``_top1.walked_best``) instead of ordering
candidates. It must pick the candidate the general path ranks first (the
same answers handed over as plain lists of groups), with the same decision
and explanation, and leave the Router in the same state (metrics, its own
estimate, the cache pressure), over random fleets: groups larger than the
general path lists whole, two media, two schemes (which take the general
path), candidate subsets, configured replicas the index has not registered,
reported sends, loads pushed between rankings, replicas removed, and ties
(equal costs and loads: the general path orders them by rendezvous weight).
"""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError, fields, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_walked_ranking import Listed

from prefixkey import Hasher
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import PrefixIndex, ReplicaId, ReplicaScheme, RouteDecision, Router
from prefixkey.fleet.routing import _router as router_module
from prefixkey.fleet.routing import _top1
from prefixkey.fleet.routing._decision import _new_decision

SCHEMES = [ReplicaScheme(Hasher(block_size=4, python_hash_seed="0")),
           ReplicaScheme(Hasher(block_size=4, python_hash_seed="1"))]
PROMPT = list(range(100, 160))  # 15 blocks
MODES = ["own", "pushed", "requests", "callable"]


@st.composite
def fleets(draw: st.DrawFn) -> tuple[PrefixIndex, list[ReplicaId], dict[ReplicaId, float],
                                     list[str]]:
    index = PrefixIndex()
    two = draw(st.booleans()) and draw(st.booleans())  # mostly one scheme: the one-pass path
    lengths = draw(st.sampled_from([[0, 15], [3, 7, 15], list(range(16)), [0], [0, 0, 0, 9]]))
    media: list[str | None] = draw(st.sampled_from([[None], [None, "CPU"], ["CPU"]]))
    # Few load values (ties at the best cost and load are common), or many.
    values = st.sampled_from(draw(st.sampled_from([[0.0], [0.0, 8.0, 20.0]])))
    if draw(st.booleans()):
        values = st.integers(0, 4000).map(lambda v: v / 8)
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
        loads[rid] = draw(values)
    configured = [f"fresh{i}" for i in range(draw(st.integers(0, 3)))]
    for name in configured:
        loads[ReplicaId(name)] = draw(values)
    return index, names, loads, configured


def _router(index: object, mode: str, loads: dict[ReplicaId, float],
            configured: list[str]) -> Router:
    if mode == "callable":
        return Router(index, load=loads.__getitem__, replicas=configured)  # type: ignore[arg-type]
    router = Router(index, load_unit="requests" if mode == "requests" else "tokens",  # type: ignore[arg-type]
                    replicas=configured)
    if mode != "own":
        for rid, value in loads.items():
            router.set_load(rid, value)
    return router


def _state(router: Router) -> tuple[object, ...]:
    return (router.metrics.as_dict(), router.mean_prefill_tokens,
            sorted(router._queues.ascending()), sorted(router._pressure._recent.ascending()),
            router._last_total)


def _read(decision: RouteDecision) -> tuple[RouteDecision, str]:
    return decision, decision.why


@settings(max_examples=300, deadline=None)
@given(fleet=fleets(), mode=st.sampled_from(MODES),
       calls=st.lists(st.tuples(st.integers(0, 60), st.sampled_from(["all", "half", "fresh"]),
                                st.integers(0, 62), st.sampled_from(["none", "push", "remove"])),
                      min_size=1, max_size=8))
def test_a_walked_top1_is_the_general_head(
        fleet: tuple[PrefixIndex, list[ReplicaId], dict[ReplicaId, float], list[str]],
        mode: str, calls: list[tuple[int, str, int, str]]) -> None:
    index, _, loads, configured = fleet
    one = _router(index, mode, loads, configured)
    general = _router(Listed(index), mode, loads, configured)
    for tokens, which, pick, between in calls:
        alive = list(index.replicas())
        candidates: list[ReplicaId | str] | None = None
        if which == "half" and len(alive) > 1:
            candidates = list(alive[::2])
        elif which == "fresh" and configured:
            candidates = [*alive[1::3], *configured[:2]]
        prompt = PROMPT[:tokens]
        top = one.rank(one.prepare(prompt, candidates), candidates, limit=1)
        head = general.rank(general.prepare(prompt, candidates), candidates)
        assert len(top) == 1
        assert _read(top[0]) == _read(head[0])
        assert _state(one) == _state(general)
        everyone = [*alive, *map(ReplicaId, configured)]
        rid = everyone[pick % len(everyone)]
        if between == "push":
            one.set_load(rid, 500.0)
            general.set_load(rid, 500.0)
        if mode != "own":  # a reported send: the cache pressure
            moved = replace(top[0], replica=rid)
            one.sent(moved)
            general.sent(moved)
        if between == "remove" and len(alive) > 1 and rid in alive:
            index.remove_replica(rid)


def _fleet(held: list[int], loads: list[float]) -> tuple[PrefixIndex, Router]:
    index = PrefixIndex()
    keys = [SCHEMES[0].publish(k) for k in SCHEMES[0].hasher.block_hashes(PROMPT)]
    router = Router(index)
    for r, (n, load) in enumerate(zip(held, loads, strict=True)):
        rid = index.register(f"r{r}", SCHEMES[0])
        if n:
            index.apply(rid, EventBatch(0.0, (BlockStored(tuple(keys[:n]), None, (), 4),)))
        router.set_load(rid, load)
    return index, router


def _passes(router: Router, monkeypatch: pytest.MonkeyPatch
            ) -> tuple[RouteDecision, list[object]]:
    """``router``'s top-1 decision for PROMPT, and what each one pass found."""
    passes: list[object] = []
    real = _top1.walked_best

    def spy(*args: Any) -> object:
        found = real(*args)
        passes.append(found)
        return found

    monkeypatch.setattr(router_module, "walked_best", spy)
    return router.rank(router.prepare(PROMPT), limit=1)[0], passes


def test_the_one_pass_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # 40 replicas, 25 of them (a group above 16, read in load order) holding all 15
    # blocks; r39 holds them with an empty queue.
    _, router = _fleet([min(r, 15) for r in range(40)],
                       [0.0 if r == 39 else 1e4 for r in range(40)])
    top, passes = _passes(router, monkeypatch)
    assert len(passes) == 1 and passes[0] is not None
    assert top.replica == ReplicaId("r39") and top.hit_tokens == 56


def test_a_tie_takes_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Equal runs and loads: the rendezvous weight orders them, which the one pass
    # leaves to the general path (it answers None).
    index, router = _fleet([15, 15, 15, 2], [5.0, 5.0, 5.0, 0.0])
    general = Router(Listed(index))  # type: ignore[arg-type]
    for r, load in enumerate([5.0, 5.0, 5.0, 0.0]):
        general.set_load(f"r{r}", load)
    top, passes = _passes(router, monkeypatch)
    assert passes == [None]
    assert _read(top) == _read(general.rank(general.prepare(PROMPT))[0])


def test_a_decision_built_by_its_slots_is_the_dataclass() -> None:
    # _new_decision builds a mutable twin (the same slots) and gives it RouteDecision's
    # class: the same object as the constructor's, frozen.
    values = (ReplicaId("r1", 2), 1, -90.5, 48, (12, 3), 40.0, 7.5, False,
              frozenset({"GPU"}), "why", "confirmed", 90.5, 20.0, 0.25, 0.5)
    built = _new_decision(*values)  # type: ignore[arg-type]
    made = RouteDecision(*values)  # type: ignore[arg-type]
    assert type(built) is RouteDecision
    assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
    assert [getattr(built, f.name) for f in fields(RouteDecision)] == list(values)
    assert replace(built, rank=2) == replace(made, rank=2)
    assert pickle.loads(pickle.dumps(built)) == made and copy.copy(built) == made
    with pytest.raises(FrozenInstanceError):
        built.rank = 3  # type: ignore[misc]
