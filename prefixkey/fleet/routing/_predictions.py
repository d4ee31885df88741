"""Routing without KV events: predicted entries, from the requests a router sent.

Many fleets run vLLM without KV events. A router can still route by prefix if
it remembers where it sent each prompt: the replica that served it caches its
full blocks until its cache evicts them. :class:`Predictions` holds those keys
as *predicted* entries; :class:`PredictedIndex` wraps any prefix-index backend
(:class:`~prefixkey.fleet.PrefixIndexBackend`) so that an unchanged
:class:`~prefixkey.fleet.Router` reads them as one more medium,
:data:`PREDICTED`, weighted like any medium by the router's ``tier_weights``
(``other_tier_weight``, 0.5, unless ``tier_weights`` names ``"PREDICTED"``;
weight 0 turns predictions off).

Semantics
---------
* :meth:`PredictedIndex.sent` records the request's published keys under the
  chosen replica's scheme, per KV-cache group. The blocks of one request are
  recorded tail first, so under eviction a chain loses its tail before its
  head, as in vLLM's free queue; recording a key again refreshes its recency
  and its age.
* A predicted entry lives ``ttl_seconds`` after its last record (the router's
  guess of how long an unobserved replica keeps a prefix). A replica whose
  events reach the index is *confirmed*: from its first batch on, its events
  are the truth and its predictions only bridge the time until the events of
  a request arrive, so they live ``confirmed_ttl_seconds``.
* Events replace predictions: a ``BlockStored`` turns the predicted entries of
  its keys into confirmed ones (the prediction is dropped, the backend holds
  the key), a ``BlockRemoved`` drops the prediction of its keys whatever the
  medium, ``AllBlocksCleared`` drops all the replica's predictions.
  Re-registering a replica with another scheme, or removing it, drops them too.
* A candidate's run is its confirmed leading run (from the backend) followed by
  the predicted keys that continue it: a confirmed block always counts as
  confirmed, and a decision's :attr:`~prefixkey.fleet.RouteDecision.evidence`
  is ``"predicted"`` when a block vLLM would reuse is only predicted.
* Bounds: at most ``max_entries`` predicted entries in all (a new one past it
  evicts, from the replica holding most, its group holding most, the entry
  recorded least recently: the policy of :class:`~prefixkey.fleet.PrefixIndex`),
  and at most ``max_entries_per_replica`` per replica when given (its KV-cache
  size in blocks: a replica cannot hold more). Expired entries are swept from
  the oldest end whenever the replica records or is looked up, and by
  :meth:`Predictions.expire`.

Time comes from ``clock`` (``time.monotonic`` by default; injectable for
tests); a clock that goes backwards is read as standing still. Sans-IO and not
thread-safe, like :class:`~prefixkey.fleet.PrefixIndex`: hold the lock that
guards the backend (e.g. :attr:`Subscriber.lock`) around :meth:`sent`,
routing and :meth:`apply`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import filterfalse
from typing import Annotated, Final, TypedDict, cast

from ...core._checks import check_int, check_number
from ...events import CLEARED, STORED, BlockOp, DecodedOps, EventBatch, EventHash
from ..index._backend import (
    IndexStats,
    PrefixIndexBackend,
    RunsAnswer,
    RunsGroup,
    RunsQuery,
    RunsResult,
    field_help,
)
from ..index._memory import ReplicaId, ReplicaScheme, UnknownReplicaError, as_replica_id
from ..index._tables import Entries, SlotPool, Table, evict_oldest, unhold
from ..index._walk import Run, mark
from ._metrics import family_lines
from ._prepared import PreparedRequest
from ._router import PREDICTED, RouteDecision

__all__ = [
    "PREDICTION_COUNTERS",
    "PredictedIndex",
    "PredictionCounters",
    "PredictionStats",
    "Predictions",
    "predictions_prometheus_text",
]

# Far above the bits backends give real media (one per medium name seen, from 1).
_PREDICTED_BIT: Final = 1 << 48

class PredictionCounters(TypedDict):
    """The counters of :meth:`Predictions.stats`, each with its help text."""

    recorded: Annotated[int, "predicted entries recorded (new keys of requests sent)"]
    refreshed: Annotated[int, (
        "keys recorded again while still predicted (recency and age refreshed)")]
    confirmed: Annotated[int, (
        "predicted entries a BlockStored event confirmed (replaced by the event's entry)")]
    removed: Annotated[int, "predicted entries a BlockRemoved event dropped"]
    cleared: Annotated[int, (
        "predicted entries dropped by AllBlocksCleared, re-registration or removal")]
    expired: Annotated[int, "predicted entries swept after their TTL (never confirmed in time)"]
    evicted: Annotated[int, "predicted entries evicted by max_entries or max_entries_per_replica"]
    sent_confirmed: Annotated[int, (
        "requests sent to a replica whose hit rests on confirmed blocks only")]
    sent_predicted: Annotated[int, "requests sent to a replica whose hit uses predicted blocks"]
    sent_none: Annotated[int, (
        "requests sent without a prefix hit (rendezvous fallback or no usable hit)")]


class PredictionStats(PredictionCounters):
    """What :meth:`Predictions.stats` returns: the counters, and gauges."""

    size: int
    max_entries: int
    replicas: int
    confirmed_replicas: int


#: The counters of :meth:`Predictions.stats` and their help text, read from
#: :class:`PredictionCounters` (the one place they are written).
PREDICTION_COUNTERS: Final[dict[str, str]] = field_help(PredictionCounters)


class _Replica(Entries[float]):
    """A replica's predicted entries (the index's slot and tables: per group, key -> the
    time of its last record, least recently recorded first), and whether its events
    reach the index."""

    __slots__ = ("confirmed",)

    def __init__(self, slot: int) -> None:
        super().__init__(slot)
        self.confirmed = False


class Predictions:
    """Predicted entries per replica and KV-cache group, with a TTL and bounds.

    Inverted like :class:`~prefixkey.fleet.PrefixIndex`: per group, key ->
    bitmask of the replica slots predicted to hold it, so :meth:`leading_runs`
    walks a request's keys once for all candidates. Slots, tables in record
    order and the eviction choice are the index's own (:mod:`..index._tables`).
    """

    def __init__(
        self, *, ttl_seconds: float = 300.0, confirmed_ttl_seconds: float = 30.0,
        max_entries: int = 1_000_000, max_entries_per_replica: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_seconds = check_number("ttl_seconds", ttl_seconds, strict=True)
        self.confirmed_ttl_seconds = check_number("confirmed_ttl_seconds",
                                                  confirmed_ttl_seconds, strict=True)
        self.max_entries = check_int("max_entries", max_entries)
        self.max_entries_per_replica = check_int("max_entries_per_replica",
                                                 max_entries_per_replica, optional=True)
        self._clock = clock
        self._now = float("-inf")
        self._replicas: dict[ReplicaId, _Replica] = {}
        self._slots = SlotPool()
        self._holders: dict[int, dict[EventHash, int]] = {}  # group -> key -> replica bits
        self._size = 0
        self._counters = dict.fromkeys(PREDICTION_COUNTERS, 0)

    def _time(self) -> float:
        now = float(self._clock())
        if now > self._now:
            self._now = now
        return self._now

    def _ttl(self, state: _Replica) -> float:
        return self.confirmed_ttl_seconds if state.confirmed else self.ttl_seconds

    def _state(self, rid: ReplicaId) -> _Replica:
        state = self._replicas.get(rid)
        if state is None:
            state = self._replicas[rid] = _Replica(self._slots.take())
        return state

    # -- recording ----------------------------------------------------------------

    def record(self, replica: ReplicaId | str, groups: Sequence[Sequence[EventHash]]) -> None:
        """Record a request sent to ``replica``: its published keys, per group."""
        now = self._time()
        state = self._state(as_replica_id(replica))
        self._expire(state, now)
        if len(groups) == 1 and self._record_bulk(state, groups[0], now):
            return
        c = self._counters
        cap = self.max_entries_per_replica
        rbit = state.bit
        for group, keys in enumerate(groups):
            table = state.tables.get(group)
            if table is None:
                table = state.tables[group] = Table()
            holders = self._holders.get(group)
            if holders is None:
                holders = self._holders[group] = {}
            for key in reversed(keys):  # tail first: the head is the most recent
                if key in table.keys:
                    del table.keys[key]  # re-inserted last: most recently recorded
                    table.deleted += 1
                    table.keys[key] = now
                    c["refreshed"] += 1
                    continue
                if cap is not None and state.count >= cap:
                    self._taken_out(state, *state.pop_oldest())
                if self._size >= self.max_entries:
                    self._taken_out(*evict_oldest(self._replicas.values()))
                table.keys[key] = now  # eviction may compact (replace) the dict: read again
                held = holders.get(key)
                holders[key] = rbit if held is None else held | rbit
                state.count += 1
                self._size += 1
                c["recorded"] += 1

    def _record_bulk(self, state: _Replica, keys: Sequence[EventHash], now: float) -> bool:
        """:meth:`record` of one group's keys with dict operations in C; False when it
        cannot (the replica has other groups, or the bound would evict this request's
        own keys, or the global bound is reached): the key-by-key path then.

        The same entries, order and counts as recording key by key, except that a key
        the request records again is never evicted to make room for its new keys.
        """
        table = state.tables.get(0)
        if len(state.tables) > (0 if table is None else 1):
            return False
        fresh = dict.fromkeys(keys[::-1], now)  # tail first: the head is the most recent
        again = fresh.keys() & table.keys.keys() if table else set()
        new = len(fresh) - len(again)
        cap = self.max_entries_per_replica
        evict = 0 if cap is None else max(state.count + new - cap, 0)
        if self._size + new - evict > self.max_entries:
            return False
        c = self._counters
        if cap is not None and len(fresh) > cap:
            # The request alone is past the bound. With keys recorded again, which of
            # them survive depends on the order: the per-key path decides.
            if again:
                return False
            # More new keys than the replica can hold: recorded tail first, each past
            # the bound evicting the oldest, they leave every earlier entry evicted and
            # the request's head (its last ``cap`` recorded).
            before = state.count
            self._drop_all(state)  # counts them cleared: they were evicted
            c["cleared"] -= before
            c["evicted"] += before + new - cap
            c["recorded"] += new - cap  # the request's tail, recorded then evicted
            keys, new, evict, table = keys[:cap], cap, 0, None
            fresh = dict.fromkeys(keys[::-1], now)
        if table is None:
            table = state.tables[0] = Table()
        if again:  # deleted here, re-inserted below, last: most recently recorded
            deque(map(table.keys.__delitem__, again), 0)
            table.deleted += len(again)
            if not new:  # only refreshes
                table.keys.update(fresh)
                c["refreshed"] += len(again)
                return True
        holders = self._holders.get(0)
        if holders is None:
            holders = self._holders[0] = {}
        rbit = state.bit
        if evict:  # the least recently recorded first
            oldest = table.oldest_keys(evict)
            deque(map(table.keys.__delitem__, oldest), 0)
            table.deleted += evict
            for key in oldest:
                unhold(holders, key, rbit)
        table.keys.update(fresh)
        added = fresh.keys() - again if again else fresh  # holders change for new keys only
        if holders.keys().isdisjoint(added):
            holders.update(dict.fromkeys(added, rbit))
        else:
            get = holders.get
            for key in added:
                held = get(key)
                holders[key] = rbit if held is None else held | rbit
        state.count += new - evict
        self._size += new - evict
        c["recorded"] += new
        c["refreshed"] += len(again)
        c["evicted"] += evict
        return True

    def _taken_out(self, state: Entries[float], group: int, key: EventHash,
                   _recorded: float, counter: str = "evicted") -> None:
        """An entry taken out of ``state``'s table (and its count): out of its holders too,
        and counted in ``counter``."""
        unhold(self._holders[group], key, state.bit)
        self._size -= 1
        self._counters[counter] += 1

    def _expire(self, state: _Replica, now: float) -> None:
        oldest = now - self._ttl(state)
        for group, table in state.tables.items():
            # Records are in time order, so the expired entries are the oldest ones: taken
            # in one scan from the oldest (a scan per entry would pass the same holes again).
            if not table.keys or table.oldest_value() >= oldest:
                continue  # oldest_value() may compact (replace) table.keys: read after it
            gone: list[EventHash] = []
            for key, recorded in table.keys.items():
                if recorded >= oldest:
                    break
                gone.append(key)
            holders = self._holders[group]
            for key in gone:
                del table.keys[key]
                unhold(holders, key, state.bit)
            table.deleted += len(gone)
            state.count -= len(gone)
            self._size -= len(gone)
            self._counters["expired"] += len(gone)

    def expire(self) -> int:
        """Sweep every replica's expired entries now; return how many went."""
        before = self._counters["expired"]
        now = self._time()
        for state in self._replicas.values():
            self._expire(state, now)
        return self._counters["expired"] - before

    # -- events -------------------------------------------------------------------

    def observe(self, replica: ReplicaId | str, scheme: ReplicaScheme, batch: EventBatch) -> None:
        """Let a batch the backend applied for ``replica`` replace its predictions."""
        self.observe_ops(replica, scheme, DecodedOps.of_batch(batch).ops)

    def observe_ops(self, replica: ReplicaId | str, scheme: ReplicaScheme,
                    ops: Iterable[BlockOp]) -> None:
        """:meth:`observe` of a batch's :data:`~prefixkey.events.BlockOp`."""
        state = self._state(as_replica_id(replica))
        state.confirmed = True
        for kind, hashes, _medium, group_idx in ops:
            if kind == CLEARED:
                self._drop_all(state)
            elif state.count:
                group = group_idx or 0
                table = state.tables.get(group)
                if table is None or not table.keys:
                    continue
                counter = "confirmed" if kind == STORED else "removed"
                keys = table.keys
                for h in hashes:
                    key = scheme.publish(h)
                    if keys.pop(key, None) is not None:
                        table.deleted += 1
                        state.count -= 1
                        self._taken_out(state, group, key, 0.0, counter)

    def _drop_all(self, state: _Replica) -> None:
        rbit = state.bit
        for group, table in state.tables.items():
            holders = self._holders[group]
            for key in table.keys:
                unhold(holders, key, rbit)
        self._counters["cleared"] += state.count
        self._size -= state.count
        state.count = 0
        state.tables = {}

    def forget(self, replica: ReplicaId | str) -> int:
        """Drop a replica's predictions and its confirmed flag; return how many entries went."""
        state = self._replicas.pop(as_replica_id(replica), None)
        if state is None:
            return 0
        dropped = state.count
        self._drop_all(state)
        self._slots.free(state.slot)
        return dropped

    # -- queries ------------------------------------------------------------------

    def leading_runs(self, replicas: Sequence[ReplicaId], group: int,
                     keys: Sequence[EventHash], starts: Sequence[int]) -> list[int]:
        """Per replica, how many consecutive keys from ``keys[start]`` on are predicted.

        The candidates' expired entries are swept first; then the keys are
        walked once for all of them, each joining the walk at its start.
        """
        out = [0] * len(replicas)
        holders = self._holders.get(group)
        if not holders:
            return out
        now = self._time()
        pending: list[tuple[int, int, int]] = []  # (start, position, replica bit)
        joined: dict[int, int] = {}  # replica bit -> its start in this walk
        again = []  # a replica listed twice with another start: walked on its own
        for i, rid in enumerate(replicas):
            state = self._replicas.get(rid)
            if state is not None and state.count:
                self._expire(state, now)
                if joined.setdefault(state.bit, starts[i]) != starts[i]:
                    again.append(i)
                elif state.count:
                    pending.append((starts[i], i, state.bit))
        for i in again:
            out[i] = self.leading_runs([replicas[i]], group, keys, [starts[i]])[0]
        if not pending:
            return out
        pending.sort()
        ends: dict[int, int] = {}  # replica bit -> where its run ended
        alive, p, j, n = 0, 0, pending[0][0], len(keys)
        get = holders.get
        while j < n:
            while p < len(pending) and pending[p][0] <= j:
                alive |= pending[p][2]
                p += 1
            if not alive:
                if p == len(pending):
                    break
                j = pending[p][0]
                continue
            held = get(keys[j], 0)
            if alive & ~held:
                mark(alive & ~held, j, ends)
                alive &= held
            j += 1
        mark(alive, n, ends)
        for start, i, rbit in pending:
            out[i] = ends.get(rbit, start) - start
        return out

    def leading(self, replica: ReplicaId, group: int, keys: Sequence[EventHash],
                start: int = 0) -> int:
        """:meth:`leading_runs` for one replica."""
        return self.leading_runs([replica], group, keys, [start])[0]

    def entries(self, replica: ReplicaId | str) -> Iterator[tuple[int, EventHash, float]]:
        """Every ``(group, key, recorded at)`` of a replica, least recently recorded first.

        Expired entries not swept yet are included.
        """
        state = self._replicas.get(as_replica_id(replica))
        for group, table in ({} if state is None else state.tables).items():
            for key, recorded in table.keys.items():
                yield group, key, recorded

    def is_confirmed(self, replica: ReplicaId | str) -> bool:
        """True once a batch of the replica's events reached the index."""
        state = self._replicas.get(as_replica_id(replica))
        return state is not None and state.confirmed

    def count_sent(self, decision: RouteDecision) -> None:
        """Count the evidence of the decision a request was sent by."""
        self._counters[f"sent_{decision.evidence}"] += 1

    def holding(self) -> frozenset[ReplicaId]:
        """The replicas holding predicted entries (expired ones not swept yet count)."""
        return frozenset(rid for rid, state in self._replicas.items() if state.count)

    def replica_size(self, replica: ReplicaId | str) -> int:
        state = self._replicas.get(as_replica_id(replica))
        return 0 if state is None else state.count

    def __len__(self) -> int:
        return self._size

    def stats(self) -> PredictionStats:
        """Counters, plus ``size``, ``max_entries``, ``replicas`` and ``confirmed_replicas``."""
        counters = cast("PredictionCounters", self._counters)  # every key: from its fields
        return {**counters, "size": self._size, "max_entries": self.max_entries,
                "replicas": len(self._replicas),
                "confirmed_replicas": sum(s.confirmed for s in self._replicas.values())}


class PredictedIndex:
    """A backend with predicted entries: what a Router reads, events and predictions merged.

    Every :class:`~prefixkey.fleet.PrefixIndexBackend` method is the wrapped
    ``index``'s, except that :meth:`apply` also lets the batch replace
    predictions, :meth:`medium_bits` adds :data:`PREDICTED` and
    :meth:`leading_runs` extends each run with predicted keys.
    """

    def __init__(self, index: PrefixIndexBackend, predictions: Predictions | None = None) -> None:
        self.index = index
        self.predictions = Predictions() if predictions is None else predictions

    # -- the Router's side --------------------------------------------------------

    def sent(self, prepared: PreparedRequest, chosen: RouteDecision | ReplicaId | str) -> None:
        """Record that ``prepared`` was sent to ``chosen`` (a decision is also counted)."""
        if isinstance(chosen, RouteDecision):
            self.predictions.count_sent(chosen)
            rid = chosen.replica
        else:
            rid = as_replica_id(chosen)
        self.predictions.record(rid, prepared.keys_for(self.index.scheme(rid)).groups)

    def leading_runs(self, queries: Sequence[RunsQuery], media: int) -> list[RunsAnswer]:
        """The backend's runs (one call), each followed by the predicted keys that continue it.

        Only candidates holding predictions are read one by one: the backend is
        asked for them and for the others in two queries (of the same call),
        and only the first are extended.
        """
        base = media & ~_PREDICTED_BIT
        held = self.predictions.holding() if media & _PREDICTED_BIT else frozenset()
        if not held:
            return self.index.leading_runs(queries, base)
        asked: list[RunsQuery] = []
        split: list[tuple[bool, bool]] = []  # per query: (has others, has predicted ones)
        for q in queries:
            mine = tuple(filter(held.__contains__, q.replicas))
            rest = tuple(filterfalse(held.__contains__, q.replicas)) if mine else q.replicas
            split.append((bool(rest), bool(mine)))
            asked += [RunsQuery(q.scheme, part, q.groups) for part in (rest, mine) if part]
        answers = iter(self.index.leading_runs(asked, base))
        out: list[RunsAnswer] = []
        for query, (others, predicted) in zip(queries, split, strict=True):
            answer = next(answers) if others else RunsAnswer(())
            if predicted:
                extended = self._extended(query, next(answers).by_replica())
                answer = RunsAnswer([*answer.groups, *extended.groups])
            out.append(answer)
        return out

    def _extended(self, query: RunsQuery, runs_of: dict[ReplicaId, RunsResult]) -> RunsAnswer:
        """The candidates' runs, each followed by the predicted keys that continue it."""
        rids = [rid for rid, result in runs_of.items() if isinstance(result, tuple)]
        # A candidate re-registered since (a scheme, not runs) is passed through.
        passed: list[RunsGroup] = [(result, [rid]) for rid, result in runs_of.items()
                                   if not isinstance(result, tuple)]
        extended = [list(cast("tuple[Run, ...]", runs_of[rid])) for rid in rids]
        for group, keys in enumerate(query.groups):
            starts = [sum(n for _, n in runs[group]) for runs in extended]
            for runs, n in zip(extended, self.predictions.leading_runs(rids, group, keys, starts),
                               strict=True):
                if n:
                    runs[group] = (*runs[group], (_PREDICTED_BIT, n))
        grouped = RunsAnswer.of_candidates(rids, list(map(tuple, extended)))
        return RunsAnswer([*grouped.groups, *passed])

    def medium_bits(self) -> dict[str, int]:
        """The backend's media and :data:`PREDICTED`.

        A backend medium that collides with it (an event's medium named
        ``PREDICTED``, or a 49th medium name) is left out, so its blocks are
        not routed on: one replica's odd events cannot stop routing.
        """
        bits = {name: bit for name, bit in self.index.medium_bits().items()
                if name != PREDICTED and bit != _PREDICTED_BIT}
        bits[PREDICTED] = _PREDICTED_BIT
        return bits

    def replicas(self) -> Mapping[ReplicaId, ReplicaScheme]:
        return self.index.replicas()

    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme:
        return self.index.scheme(replica)

    # -- the events' side ---------------------------------------------------------

    def register(self, replica: ReplicaId | str, scheme: ReplicaScheme) -> ReplicaId:
        """Register with the backend; a changed scheme drops the replica's predictions."""
        rid = as_replica_id(replica)
        try:
            before: ReplicaScheme | None = self.index.scheme(rid)
        except UnknownReplicaError:
            before = None
        rid = self.index.register(rid, scheme)
        if before is not None and before.key != scheme.key:
            self.predictions.forget(rid)
        return rid

    def remove_replica(self, replica: ReplicaId | str) -> int:
        self.predictions.forget(replica)
        return self.index.remove_replica(replica)

    def apply(self, replica: ReplicaId | str, batch: EventBatch) -> None:
        """Apply to the backend, then let the batch replace the replica's predictions."""
        self.apply_ops(replica, DecodedOps.of_batch(batch))

    def apply_ops(self, replica: ReplicaId | str, decoded: DecodedOps) -> None:
        """:meth:`apply` of a payload as :meth:`~prefixkey.events.EventDecoder.ops` decodes
        it: the backend's ``apply_ops``, then the predictions replaced."""
        rid = (ReplicaId(replica, decoded.data_parallel_rank or 0)
               if isinstance(replica, str) else as_replica_id(replica))
        self.index.apply_ops(rid, decoded)
        try:
            scheme = self.index.scheme(rid)
        except UnknownReplicaError:
            return  # ignored (and counted) by the backend: it predicts nothing either
        self.predictions.observe_ops(rid, scheme, decoded.ops)

    # -- the rest of the backend, unchanged ---------------------------------------

    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]:
        return self.index.table(replica, group)

    def media(self, replica: ReplicaId | str, key: EventHash, group: int = 0) -> frozenset[str]:
        return self.index.media(replica, key, group)

    def entries(self, replica: ReplicaId | str) -> Iterator[tuple[int, EventHash, frozenset[str]]]:
        return self.index.entries(replica)

    def replica_size(self, replica: ReplicaId | str) -> int:
        return self.index.replica_size(replica)

    def __len__(self) -> int:
        return len(self.index)

    def stats(self) -> IndexStats:
        """The backend's (:meth:`Predictions.stats` counts the predictions)."""
        return self.index.stats()


def predictions_prometheus_text(stats: PredictionStats | Mapping[str, int]) -> str:
    """Render :meth:`Predictions.stats` in the Prometheus text exposition format (0.0.4)."""
    stats = cast("Mapping[str, int]", stats)  # read by the names of its fields
    lines: list[str] = []
    for counter, help_text in PREDICTION_COUNTERS.items():
        family_lines(lines, f"prefixkey_predictions_{counter}_total", "counter",
                     help_text.capitalize() + ".", [({}, stats[counter])])
    for gauge, help_text in (("size", "Predicted entries held."),
                             ("max_entries", "The predictions' entry bound."),
                             ("confirmed_replicas", "Replicas whose events reach the index.")):
        family_lines(lines, f"prefixkey_predictions_{gauge}", "gauge", help_text,
                     [({}, stats[gauge])])
    return "\n".join(lines) + "\n"
