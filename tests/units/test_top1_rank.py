"""A top-1 ranking is the head of the full ranking, over random fleets and histories.

``Router.rank(prepared, limit=1)`` stops at the best candidate (groups
bounded and opened lazily, tie seeds worked out only for ties): it must pick
the same candidate, with the same decision and explanation, as the full
ranking, for any index, loads (pushed, a callable, in requests, or the
Router's own estimate, which each decision moves) and reported sends. Two
Routers over one index are fed the same calls; one reads the head only.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from prefixkey import Hasher
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import PrefixIndex, ReplicaId, ReplicaScheme, Router

SCHEMES = [ReplicaScheme(Hasher(block_size=4, python_hash_seed="0")),
           ReplicaScheme(Hasher(block_size=4, python_hash_seed="1"))]
PROMPTS = [list(range(100, 100 + n)) for n in (3, 4, 17, 24, 40)]
MODES = ["own", "pushed", "callable", "requests"]


@st.composite
def fleets(draw: st.DrawFn) -> tuple[PrefixIndex, list[ReplicaId], dict[ReplicaId, float]]:
    index = PrefixIndex()
    replicas = draw(st.integers(1, 40))
    two = draw(st.booleans())
    loads: dict[ReplicaId, float] = {}
    names = []
    for r in range(replicas):
        scheme = SCHEMES[r % 2] if two else SCHEMES[0]
        rid = index.register(f"r{r}", scheme)
        names.append(rid)
        prompt = PROMPTS[draw(st.integers(0, len(PROMPTS) - 1))]
        keys = [scheme.publish(k) for k in scheme.hasher.block_hashes(prompt)]
        held = draw(st.integers(0, len(keys)))
        medium = draw(st.sampled_from([None, "GPU", "CPU"]))
        if held:
            index.apply(rid, EventBatch(0.0, (BlockStored(
                tuple(keys[:held]), None, (), 4, medium=medium),)))
        loads[rid] = float(draw(st.sampled_from([0, 0, 4, 16, 40, 100])))
    return index, names, loads


def _router(index: PrefixIndex, mode: str, loads: dict[ReplicaId, float]) -> Router:
    if mode == "callable":
        return Router(index, load=loads.__getitem__)
    if mode == "requests":
        return Router(index, load=loads.__getitem__, load_unit="requests")
    router = Router(index)
    if mode == "pushed":
        for rid, value in loads.items():
            router.set_load(rid, value)
    return router


@settings(max_examples=80, deadline=None)
@given(fleet=fleets(), mode=st.sampled_from(MODES),
       calls=st.lists(st.tuples(st.integers(0, len(PROMPTS) - 1), st.booleans(),
                                st.integers(0, 39)), min_size=1, max_size=12))
def test_top1_is_the_head_of_the_full_ranking(
        fleet: tuple[PrefixIndex, list[ReplicaId], dict[ReplicaId, float]], mode: str,
        calls: list[tuple[int, bool, int]]) -> None:
    index, names, loads = fleet
    head, full = _router(index, mode, loads), _router(index, mode, loads)
    for prompt, subset, sent_to in calls:
        candidates = names[::2] if subset and len(names) > 1 else None
        top = head.rank(head.prepare(PROMPTS[prompt], candidates), candidates, limit=1)
        everyone = full.rank(full.prepare(PROMPTS[prompt], candidates), candidates)
        assert len(top) == 1
        assert top[0] == everyone[0]
        assert top[0].why == everyone[0].why
        if mode != "own":  # a reported send moves the cache pressure of both alike
            moved = replace(top[0], replica=names[sent_to % len(names)])
            head.sent(moved)
            full.sent(moved)
