"""A top-1 ranking read straight from the walk: the best candidate in one pass (sans-IO).

``Router.rank(prepared, limit=1)`` over the in-memory index (one walk:
``PrefixIndex._prefix_walk``) and queues the Router keeps (pushed loads or its own
estimate) needs one candidate, not an order: :func:`walked_best` reads the
walk's ends longest run first (from the end of its running AND, stepping as
``runs_back`` does: the short runs a top-1 ranking never reaches are never worked
out), each run's members from its mask, and the queues in load order, and keeps
the lowest ``(cost, load)`` seen, with no heap, no listing, no generator and no
object per group or candidate. It reads exactly the
candidates :class:`~._cost_order._CostOrder` would list before its first
candidate comes out (a group while its bound, its prefill at the least queue,
is not above the best cost seen; the candidates holding nothing, and the
members of a group larger than ``_LISTED_AT_MOST``, in load order while theirs
is not), with the same arithmetic, so the best is the general path's head. A
tie at the best ``(cost, load)`` is ordered by rendezvous weights over seeds
this pass does not work out: it returns None, and the Router ranks the same
walk on the general path (tests/units/test_top1_walk.py compares the two over
random fleets).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Collection, Mapping, Sequence
from operator import neg
from typing import NamedTuple

from .._replicas import ReplicaId
from ..index._walk import Slots
from ._cost_order import _LISTED_AT_MOST

__all__ = ["Best", "slot_bits", "walked_best"]


class Best(NamedTuple):
    """The best candidate: its run (keys walked; 0 when it holds nothing), queue and cost."""

    replica: ReplicaId
    walked: int
    load: float
    cost: float
    pressure: float


def slot_bits(slots: Slots) -> dict[ReplicaId, int]:
    """Each replica's holder-set bit in ``slots`` (kept by the Router per slot table)."""
    return {rid: 1 << i for i, rid in enumerate(slots) if rid is not None}


def walked_best(ands: Sequence[int], slots: Slots, bits: Mapping[ReplicaId, int],
                weight: float, block: int, num_tokens: int, twice: float, per: float,
                queues: tuple[dict[ReplicaId, float], float, Sequence[tuple[float, ReplicaId]]],
                pressure_of: Callable[[ReplicaId], float] | None,
                registered: Collection[ReplicaId], extra: Collection[ReplicaId]) -> Best | None:
    """The lowest ``(cost, load)`` candidate of a walk (None on a tie there).

    ``ands`` is the walk's running AND (:func:`~prefixkey.fleet.index._walk.prefix_ands`),
    whose runs are read from its end as :func:`~prefixkey.fleet.index._walk.runs_back`
    reads them; ``queues`` is the Router's
    queues as stored (values, their scale, and the ``(stored, replica)`` pairs
    in ascending order: every candidate is in them); ``per`` turns a queue
    into tokens; ``pressure_of`` None when every pressure is 0. ``registered``
    are the candidates of the walk's query, ``extra`` the configured
    candidates the index has not registered (they hold nothing).
    """
    values, scale, ascending = queues
    get = values.get
    listed_at_most = _LISTED_AT_MOST  # a larger group is read in load order
    # A mask's slots are never free (annotated, not cast: typing.cast is a Python call).
    held_slots: Sequence[ReplicaId] = slots  # type: ignore[assignment]
    floor = ascending[0][0] * scale * per if ascending else 0.0
    cap = max(num_tokens - 1, 0) // block
    best_cost = best_load = math.inf
    best_rid: ReplicaId | None = None
    best_walked = 0
    tied = False
    # A pressure is a function of the replica: the best one's is read again at the end.
    # runs_back's steps, inline (a generator's resume and a pair per run were a third of
    # a run's cost): the candidates of ``held ^ after`` walked ``n`` keys, longest first.
    n = len(ands) - 1
    held, after = (ands[n], 0) if n >= 0 else (0, 0)
    while n > 0:
        # _segment_saved's arithmetic, inline (a call per group is most of a group's cost)
        left = num_tokens - weight * (n if n < cap else cap) * block
        need = left * twice
        if need + floor > best_cost:  # this group's bound, and every later one's, is above
            break
        mask = held ^ after
        if mask & (mask - 1) and mask.bit_count() > listed_at_most:  # as _CostOrder reads it
            for stored, rid in ascending:
                load = stored * scale * per
                if need + load > best_cost:
                    break
                if not bits.get(rid, 0) & mask:
                    continue
                cost = need + load if pressure_of is None else (
                    left * (twice + pressure_of(rid)) + load)
                if cost <= best_cost:
                    if cost < best_cost or load < best_load:
                        best_cost, best_load, tied, best_rid, best_walked = (
                            cost, load, False, rid, n)
                    elif load == best_load:
                        tied = True
            mask = 0
        while mask:  # each member, lowest slot first: no list, no call
            low = mask & -mask
            mask ^= low
            rid = held_slots[low.bit_length() - 1]
            load = get(rid, 0.0) * scale * per
            cost = need + load if pressure_of is None else (
                left * (twice + pressure_of(rid)) + load)
            if cost <= best_cost:
                if cost < best_cost or load < best_load:
                    best_cost, best_load, tied, best_rid, best_walked = cost, load, False, rid, n
                elif load == best_load:
                    tied = True
        # The next run: the entries before ``n`` equal to ``held`` are passed by a binary
        # search, as runs_back does; entry 0 holds every candidate, so none left ends it.
        first = bisect_left(ands, -held, 0, n, key=neg) if ands[n - 1] == held else n
        if not first:
            break
        n, after = first - 1, held
        held = ands[n]
    # The candidates holding nothing (entry 0's that no later entry holds, and the
    # unregistered), least queued first: their bound is above every group's, so this is
    # reached only with every group read.
    nothing = held ^ after if n == 0 else 0
    need = num_tokens * twice
    if need + floor <= best_cost:
        for stored, rid in ascending:
            load = stored * scale * per
            if need + load > best_cost:
                break
            if rid in registered:
                bit = bits.get(rid)
                if bit is not None and not bit & nothing:
                    continue  # holds a run: its group's
            elif rid not in extra:
                continue  # not a candidate
            cost = need + load if pressure_of is None else (
                (num_tokens - 0.0) * (twice + pressure_of(rid)) + load)
            if cost <= best_cost:
                if cost < best_cost or load < best_load:
                    best_cost, best_load, tied, best_rid, best_walked = (
                        cost, load, False, rid, 0)
                elif load == best_load:
                    tied = True
    if tied or best_rid is None:
        return None
    # tuple.__new__ in C: a NamedTuple's own __new__ is a Python frame.
    return tuple.__new__(Best, (best_rid, best_walked, best_load, best_cost,
                                0.0 if pressure_of is None else pressure_of(best_rid)))

