"""The cost order: a Router ranking's candidates, cheapest first, found lazily.

:class:`_CostOrder` reads the index's answers as scored groups (:class:`_Scored`,
:class:`_Walked`) in a heap bounded by their lowest possible cost, and lists a
candidate only when its bound comes first; :class:`_Listing` keeps the listed
candidates and their rendezvous seeds (:class:`_TieSeed`) for the ties. The Router
(``_router``) imports this module and passes itself in as :class:`_Scoring`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Final, NamedTuple, Protocol, cast

from .._replicas import ReplicaId, ReplicaScheme
from ..index._walk import OrderedGroups, Run, members_of
from ._prepared import (
    PreparedRequest,
    affinity_digest,
    affinity_of_key,
    rendezvous_seed,
    rendezvous_weights,
)
from ._pressure import PressureFn, no_pressure
from ._queues import Queues


class _Scored(NamedTuple):
    """What the order needs of a leading run, shared by the candidates with equal runs.

    The rest of its :class:`_Outcome` is worked out only for decisions read.
    """

    weighted: float
    hit_tokens: int
    scheme: ReplicaScheme | None  # None: a configured replica the index has not registered
    runs: tuple[Run, ...]


#: What a configured replica the index has not registered holds: nothing.
_NOTHING: Final = _Scored(0.0, 0, None, ())


class _Group(NamedTuple):
    """An answer's group, scored (``neg_score``: minus what its runs save)."""

    neg_score: float
    scored: _Scored
    members: Sequence[ReplicaId]
    seed: int


class _TieSeed:
    """The rendezvous seed of a group's holders that tie: the first key none of them holds.

    Requests sharing only what the tied replicas hold (a common system
    prompt) then spread over them, and identical longer prefixes still
    meet; the first block key would send them all to one replica. Worked
    out on first use: most groups a ranking opens never tie.
    """

    __slots__ = ("_prepared", "_scored", "_seed")

    def __init__(self, prepared: PreparedRequest, scored: _Scored, seed: int) -> None:
        self._prepared = prepared
        self._scored: _Scored | None = scored
        self._seed = seed

    def value(self) -> int:
        scored = self._scored
        if scored is None:
            return self._seed
        self._scored = None
        seed = _unheld_seed(self._prepared, scored)
        if seed is not None:
            self._seed = seed
        return self._seed


def _unheld_seed(prepared: PreparedRequest, scored: _Scored) -> int | None:
    """The rendezvous seed on the first key of the request the run of ``scored`` does not
    hold (None without a key or a run: the seed stays its scheme's)."""
    if scored.scheme is not None and scored.runs:
        keys = prepared.keys_for(scored.scheme).groups[0]
        if keys:
            held = sum(n for _, n in scored.runs[0])
            return rendezvous_seed(affinity_of_key(keys[min(held, len(keys) - 1)]))
    return None


class _Listing:
    """The candidates in the order they were listed (when the ranking reached them).

    A position in these lists is what :class:`LazyRanking` orders and builds
    decisions from.
    """

    __slots__ = ("_walked", "entries", "prepared", "rids", "seeds")

    def __init__(self, prepared: PreparedRequest) -> None:
        self.prepared = prepared
        self.rids: list[ReplicaId] = []
        self.entries: list[_Scored] = []  # each candidate's scored runs (shared by its group)
        #: Each candidate's rendezvous seed (its scheme's), or its group's, worked out
        #: when a tie first needs it (a ranking read to its head rarely has one): a
        #: walked group's (:class:`_Walked`, its run never empty) is its ``_Scored``.
        self.seeds: list[int | _TieSeed | _Scored] = []
        self._walked: dict[int, int] = {}  # id(a walked group's _Scored) -> its seed

    def _seed(self, seed: int | _TieSeed | _Scored) -> int:
        if type(seed) is int:
            return seed
        if type(seed) is _TieSeed:
            return seed.value()
        scored = cast("_Scored", seed)
        found = self._walked.get(id(scored))
        if found is None:
            found = self._walked[id(scored)] = cast("int", _unheld_seed(self.prepared, scored))
        return found

    def tie_order(self, positions: list[int]) -> list[int]:
        """``positions`` by :func:`rendezvous_weight`, highest first (weights and sort in C)."""
        seeds = list(map(self._seed, map(self.seeds.__getitem__, positions)))
        weights = rendezvous_weights(map(self.rids.__getitem__, positions), seeds)
        return list(map(positions.__getitem__, sorted(
            range(len(positions)), key=weights.__getitem__, reverse=True)))


#: A group of an answer whose candidates' scheme is the query's: runs, and the candidates.
_Runs = tuple[tuple[Run, ...], Sequence[ReplicaId]]


class _Answer(NamedTuple):
    """One query's answer, as the ranking reads it: every result a tuple of runs."""

    scheme: ReplicaScheme
    seed: int  # :func:`rendezvous_weight`'s seed for the scheme's affinity key
    groups: Sequence[_Runs]
    ordered: bool


def _extra_seed(prepared: PreparedRequest) -> int:
    """The rendezvous seed for candidates the index has not registered."""
    for keys in prepared._schemes.values():
        return rendezvous_seed(keys.affinity)
    if prepared.request is not None:
        return rendezvous_seed(affinity_digest(prepared.request))
    return rendezvous_seed(prepared.num_tokens.to_bytes(8, "big"))


class _Scoring(Protocol):
    """What the order reads of the Router (``_router.Router``, which imports this module)."""

    def _mask_weight(self, mask: int) -> tuple[float, str, frozenset[str]]: ...

    def _scored_groups(self, answer: _Answer, num_tokens: int) -> Iterator[_Group]: ...


#: Heap entries: (cost, load, kind, sequence, payload). Kinds sort a group not yet
#: opened before the rest of the fleet, and both before a candidate of equal cost.
_GROUP, _REST, _PEEK, _ONE = 0, 1, 2, 3


#: The prefill a request needs counts twice: once as its own wait, once as work
#: added to the fleet, which later requests queue behind (``_router``'s module docs).
_TWICE: Final = 2.0

#: A group of more candidates than this is read from the queues in load order
#: (its members a set) instead of listed whole.
_LISTED_AT_MOST: Final = 16


def _segment_saved(weight: float, blocks: int, block_size: int, cap: int) -> tuple[float, int]:
    """What a one-segment run of ``blocks`` saves, at most ``cap`` blocks reused: its tokens
    weighted by its medium's ``weight``, and the tokens reused (:meth:`Router._scored`'s
    usual case, and every group of a :class:`_Walked` answer: one arithmetic for both)."""
    used = min(blocks, cap)
    return weight * used * block_size, used * block_size


class _Walked:
    """An ordered answer read from its walk (:attr:`OrderedGroups.walked`), longest run first.

    A group is a ``(keys walked, holder mask)`` end of the walk: it is scored
    and its members listed when its bound comes first, with no group object
    and no call per member (a top-1 ranking at 64 replicas and 1k tokens opens
    about ten groups, most of one replica). ``at`` is the next group's end;
    ``saved``/``hit`` its run's worth.
    """

    __slots__ = ("at", "block", "cap", "ends", "hit", "medium", "saved", "scheme", "seed",
                 "slots", "weight")

    def __init__(self, router: _Scoring, answer: _Answer, groups: OrderedGroups,
                 num_tokens: int) -> None:
        self.ends, self.medium, slots = groups.walked
        self.slots = cast("Sequence[ReplicaId]", slots)  # a mask's slots are never free
        self.scheme = answer.scheme
        self.seed = answer.seed
        self.block = answer.scheme.groups[0].block_size
        self.cap = max(num_tokens - 1, 0) // self.block
        self.weight = router._mask_weight(self.medium)[0]
        self.at = len(self.ends)
        self.saved, self.hit = 0.0, 0

    def advance(self) -> bool:
        """Move to the next group, and work out its worth; False when the next group holds
        nothing (its members, and the rest, come from the queues) or none is left."""
        self.at -= 1
        if self.at < 0 or not self.ends[self.at][0]:
            return False
        self.saved, self.hit = _segment_saved(self.weight, self.ends[self.at][0], self.block,
                                              self.cap)
        return True


class _CostOrder:
    """The candidates by (cost, load), lowest first, one list per tie, found best first.

    A group of candidates with equal runs (an index answer's group) enters a
    heap unopened, at the lowest cost any member could have (``num_tokens -
    saved + the least queue``); it is listed only when that bound comes first,
    and an ordered answer's next group only then. Candidates holding nothing
    (the answers' empty groups, and configured replicas the index has not
    registered) are never listed as a group: once every other group is open
    they come from the queues in load order, skipping those listed; a large
    group is read the same way, its members a set. A ranking read to its
    head then costs the groups it opens and the queues it reads, not the
    fleet. The in-memory index's ordered answers are read from the walk
    itself (:class:`_Walked`, :meth:`_open_walked`): the same groups, bounds
    and costs (listed by :meth:`_list_group`) without an object per group
    (tests/units/test_walked_ranking.py compares the two paths).
    """

    __slots__ = ("_empty", "_floor", "_heap", "_listed", "_pressure", "_queues", "_router",
                 "_schemes", "_seq", "_snapshot", "_tokens", "costs", "extra", "extra_seed",
                 "fallback", "listing", "loads", "per", "prepared", "pressures", "twice")

    def __init__(self, router: _Scoring, prepared: PreparedRequest,
                 schemes: Mapping[ReplicaId, ReplicaScheme], extra: tuple[ReplicaId, ...],
                 queues: Queues, per: float, answers: list[_Answer],
                 pressure: PressureFn = no_pressure,
                 twice: float = _TWICE) -> None:
        self._router = router
        self.twice = twice  # what a prefill token needed counts: 1 + 1 / (1 - utilization)
        self._pressure = pressure
        self.pressures: list[float] = []
        self.prepared = prepared
        self._schemes = schemes
        self.extra = frozenset(extra)
        self._queues = queues
        self.per = per
        self._tokens = prepared.num_tokens
        self.listing = _Listing(prepared)
        self.loads: list[float] = []
        self.costs: list[float] = []
        self._listed: set[ReplicaId] = set()
        self.extra_seed = _extra_seed(prepared) if extra else 0
        #: Per scheme object (alive while the ranking is): what holding nothing is, and its seed.
        self._empty: dict[int, tuple[_Scored, int]] = {}
        self._heap: list[tuple[float, float, int, int, object]] = []
        self._seq = itertools.count(1)  # heap entries never compare their payloads
        self._snapshot: tuple[list[tuple[float, ReplicaId]], float] | None = None
        self._floor = floor = queues.minimum() * per
        hit = False
        for answer in answers:
            if answer.ordered and type(answer.groups) is OrderedGroups:
                walked = _Walked(router, answer, answer.groups, self._tokens)
                if walked.advance():
                    hit = hit or walked.hit > 0
                    self._push((self._tokens - walked.saved) * self.twice + floor, -math.inf,
                               _GROUP, walked)
                continue
            groups = self._router._scored_groups(answer, self._tokens)
            if answer.ordered:
                first = next(groups, None)
                if first is not None:
                    hit = hit or first.scored.hit_tokens > 0
                    self._push_group(first, groups, floor)
            else:
                for group in groups:
                    hit = hit or group.scored.hit_tokens > 0
                    self._push_group(group, None, floor)
        self.fallback = not hit
        self._push(self._tokens * self.twice + floor, -math.inf, _REST, None)

    def _push(self, cost: float, load: float, kind: int, payload: object) -> None:
        heapq.heappush(self._heap, (cost, load, kind, next(self._seq), payload))

    def _push_group(self, group: _Group, rest: Iterator[_Group] | None, floor: float) -> None:
        self._push((self._tokens - group.scored.weighted) * self.twice + floor, -math.inf, _GROUP,
                   (group, rest, floor))

    def _list(self, rid: ReplicaId, scored: _Scored, seed: int | _TieSeed, load: float) -> int:
        listing = self.listing
        listing.rids.append(rid)
        listing.entries.append(scored)
        listing.seeds.append(seed)
        self.loads.append(load)
        pressure = self._pressure(rid)
        self.pressures.append(pressure)
        # (num_tokens - saved) * (twice + pressure) + load, summed as the bounds are (pressure
        # 0): a bound at the least queue is never above a member's cost after rounding.
        self.costs.append((self._tokens - scored.weighted) * (self.twice + pressure) + load)
        self._listed.add(rid)
        return len(listing.rids) - 1

    def _list_group(self, members: Iterable[ReplicaId], scored: _Scored,
                    seed: int | _TieSeed | _Scored) -> None:
        """:meth:`_list` and push each of a small group's members, in one pass (the same
        costs: without pressure ``twice + 0.0`` is ``twice``; no call per member then)."""
        listing = self.listing
        rids, entries, seeds = listing.rids, listing.entries, listing.seeds
        loads, costs, pressures, listed = self.loads, self.costs, self.pressures, self._listed
        per, heap, twice = self.per, self._heap, self.twice
        # Queues.get(rid) is values.get(rid, 0.0) * scale: read here without a call each
        # (nothing moves the queues while this runs).
        values, scale = self._queues.stored()
        left = self._tokens - scored.weighted
        pressure_of = None if self._pressure is no_pressure else self._pressure
        need = left * twice
        pressure = 0.0
        pos = len(rids)
        seq = self._seq
        for rid in members:
            load = values.get(rid, 0.0) * scale * per
            if pressure_of is None:
                cost = need + load
            else:
                pressure = pressure_of(rid)
                cost = left * (twice + pressure) + load
            rids.append(rid)
            entries.append(scored)
            seeds.append(seed)
            loads.append(load)
            pressures.append(pressure)
            costs.append(cost)
            listed.add(rid)
            heapq.heappush(heap, (cost, load, _ONE, next(seq), pos))
            pos += 1

    def _open(self, payload: tuple[_Group, Iterator[_Group] | None, float]) -> None:
        group, rest, floor = payload
        if rest is not None:
            nxt = next(rest, None)
            if nxt is not None:
                self._push_group(nxt, rest, floor)
        scored = group.scored
        if scored.hit_tokens == 0 and not any(scored.runs):
            return  # holds nothing: its members come from the queues, in load order
        members = group.members
        seed = _TieSeed(self.prepared, scored, group.seed)
        if len(members) > _LISTED_AT_MOST:  # in load order from the queues, as read
            inside = set(members)
            self._next_from(self._ascending(inside.__contains__), scored, seed)
            return
        self._list_group(members, scored, seed)

    def _open_walked(self, walked: _Walked) -> None:
        """Open a walked answer's group whose bound came first, and the next ones while their
        bounds would come first (their heap entries would be popped next: the same groups
        are open when a candidate is popped, in another order, which no decision reads)."""
        heap, tokens, twice, floor = self._heap, self._tokens, self.twice, self._floor
        ends, slots, scheme, medium, prepared = (walked.ends, walked.slots, walked.scheme,
                                                 walked.medium, self.prepared)
        while True:
            n, mask = ends[walked.at]
            saved = walked.saved
            scored = _Scored(saved, walked.hit, scheme, (((medium, n),),))
            if mask.bit_count() > _LISTED_AT_MOST:  # in load order from the queues, as read
                inside = set(members_of(mask, slots))
                self._next_from(self._ascending(inside.__contains__), scored,
                                _TieSeed(prepared, scored, walked.seed))
            else:  # its tie seed (the scored runs) is worked out only if it ties
                self._list_group((slots[mask.bit_length() - 1],) if not mask & (mask - 1)
                                 else members_of(mask, slots), scored, scored)
            if not walked.advance():
                return
            bound = (tokens - walked.saved) * twice + floor
            if heap and bound > heap[0][0]:
                self._push(bound, -math.inf, _GROUP, walked)
                return

    def _ascending(self, keep: Callable[[ReplicaId], bool]) -> Iterator[tuple[float, ReplicaId]]:
        """The queues' snapshot (taken once per ranking) in load order, those ``keep`` keeps."""
        if self._snapshot is None:
            self._snapshot = self._queues.snapshot()
        pairs, scale = self._snapshot
        return ((v * scale, r) for v, r in pairs if keep(r))

    def _empty_of(self, rid: ReplicaId) -> tuple[_Scored, int]:
        scheme = self._schemes.get(rid)
        if scheme is None:
            return _NOTHING, self.extra_seed
        found = self._empty.get(id(scheme))
        if found is None:  # the seed is its answer's: the first key under the scheme
            found = self._empty[id(scheme)] = (
                _Scored(0.0, 0, scheme, tuple(() for _ in scheme.groups)),
                rendezvous_seed(self.prepared.keys_for(scheme).affinity))
        return found

    def _rest(self, rid: ReplicaId) -> bool:
        """A candidate holding nothing, not yet listed."""
        return rid not in self._listed and (rid in self._schemes or rid in self.extra)

    def _next_from(self, stream: Iterator[tuple[float, ReplicaId]], scored: _Scored | None,
                   seed: int | _TieSeed) -> None:
        """Push a bound for the next candidate of a load-ordered stream (``scored`` None:
        holds nothing): its cost at no pressure, never above the cost of any candidate
        later in the stream. It is listed, at its own cost, when the bound comes first."""
        for queued, rid in stream:
            if rid in self._listed:
                continue
            load = queued * self.per
            weighted = 0.0 if scored is None else scored.weighted
            self._push((self._tokens - weighted) * self.twice + load, -math.inf, _PEEK,
                       (rid, load, stream, scored, seed))
            return

    def _peeked(self, rid: ReplicaId, load: float, stream: Iterator[tuple[float, ReplicaId]],
                scored: _Scored | None, seed: int | _TieSeed) -> None:
        """List a stream's candidate whose bound came first, and bound the next one."""
        if rid not in self._listed:
            where: int | _TieSeed
            if scored is None:
                entry, where = self._empty_of(rid)
            else:
                entry, where = scored, seed
            pos = self._list(rid, entry, where, load)
            self._push(self.costs[pos], load, _ONE, pos)
        self._next_from(stream, scored, seed)

    def _pop(self) -> int | None:
        """Open groups until a candidate is at the top; pop it (None when none is left)."""
        heap = self._heap
        while heap:
            _, _, kind, _, payload = heapq.heappop(heap)
            if kind == _GROUP:
                if type(payload) is _Walked:
                    self._open_walked(payload)
                else:
                    self._open(cast("tuple[_Group, Iterator[_Group] | None, float]", payload))
            elif kind == _REST:
                self._next_from(self._ascending(self._rest), None, 0)
            elif kind == _PEEK:
                self._peeked(*cast("tuple[ReplicaId, float, Iterator[tuple[float, ReplicaId]], "
                                   "_Scored | None, int | _TieSeed]", payload))
            else:
                return cast("int", payload)
        return None

    def groups(self) -> Iterator[list[int]]:
        """The positions in rank order, one list per (cost, load) tie."""
        heap = self._heap
        while True:
            pos = self._pop()
            if pos is None:
                return
            key = (self.costs[pos], self.loads[pos])
            tie = [pos]
            # Groups that could hold an equal key sort before it and are opened first.
            while heap and (heap[0][0], heap[0][1]) <= key:
                nxt = self._pop()
                if nxt is None:
                    break
                if (self.costs[nxt], self.loads[nxt]) != key:  # not reached: groups open first
                    self._push(self.costs[nxt], self.loads[nxt], _ONE, nxt)
                    break
                tie.append(nxt)
            yield tie
