"""The leading-run walk: its ends, key by key, also when it finishes in C.

:func:`walk` hands the rest of a walk to ``_dense_walk`` once the holder set
has changed at most keys (many replicas, each with its own run length); the
ends must be those of the plain definition, one key at a time: holder sets
that are not nested, keys missing or held by none of the candidates, empty
masks, candidates that are a subset of the holders.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from prefixkey.events import EventHash
from prefixkey.fleet.index import _walk
from prefixkey.fleet.index._walk import walk


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
