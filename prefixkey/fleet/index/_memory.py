"""Which replica holds which block keys: an index fed by vLLM's KV-cache events.

Sans-IO: :meth:`PrefixIndex.apply` takes typed :class:`~prefixkey.events.EventBatch`
values (decoding and transport live elsewhere); nothing here opens sockets,
starts threads or logs.

A replica is identified by ``(name, data-parallel rank)`` (:class:`ReplicaId`).
Its registration carries its :class:`ReplicaScheme`: the
:class:`~prefixkey.core.Hasher` that reproduces its keys (so replicas on
different releases, int-keyed and bytes-keyed, coexist), whether its events
publish 64-bit ints or digest bytes, and its KV-cache groups.

Semantics
---------
* Keys are stored per replica, per KV-cache group (``group_idx``, 0 when the
  release does not publish it) and per storage medium (``"GPU"`` when the
  release does not publish it; ``"CPU"``, ``"STORAGE"``… for offload tiers),
  in the form the replica publishes. Digest bytes reaching an int publisher are
  reduced with :func:`~prefixkey.core.block_hash_to_int64`; ints reaching a
  bytes publisher cannot be widened and are dropped (``hash_type_mismatches``).
* ``BlockStored`` adds the keys (idempotent: a re-announcement, e.g.
  ``kv_cache_report_mode="full"``, only refreshes recency); ``BlockRemoved``
  removes them for its medium (removing an absent key is counted, not an
  error); ``AllBlocksCleared`` drops every entry of the replica. 0.26+
  partial-block pairs (a fine key stored, later removed and the group key
  stored) need nothing special, nor do 0.33 lookahead keys: keys are stored
  as published.
* Every operation is idempotent, so a batch applied twice leaves the same
  entries and the same ``size``; ``stores``/``removes`` count changes only,
  repeats go to ``refreshes``/``removes_missing``. A batch older (``ts``) than
  one already applied from the replica is applied too and counted in
  ``out_of_order_batches``: ordering and gap recovery belong to the transport
  (sequence numbers and replay), and a wrong guess here costs one cache miss.
* Batches for unregistered replicas are counted (``unknown_replica_batches``,
  ``unknown_replica_events``) and ignored.

Layout
------
Inverted: per group and medium, block key -> bitmask of the replica slots
holding it, so :meth:`PrefixIndex.longest_runs` walks a request's keys once
for all candidates. Each replica also keeps, per group, its keys in store
order (key -> media bitmask) for eviction, :meth:`~PrefixIndex.entries` and
:meth:`~PrefixIndex.table`.

Memory bound
------------
One *entry* is one ``(replica, group, key)`` whatever the number of media
holding it. When an event would take the index past ``max_entries``, the
index evicts an entry (:mod:`._tables` says which). Size ``max_entries`` at or
above the sum of the replicas' KV-cache capacities (in blocks, per medium
tier counted once) and eviction never triggers: vLLM's own BlockRemoved
events keep the index exact.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import reduce
from itertools import chain, groupby, repeat
from operator import attrgetter, itemgetter, or_
from types import MappingProxyType
from typing import Final, NamedTuple, cast

from ...core import block_hash_to_int64
from ...core._checks import check_int
from ...errors import InvalidRequestError
from ...events import (
    CLEARED,
    REMOVED,
    STORED,
    AllBlocksCleared,
    BlockOp,
    BlockRemoved,
    BlockStored,
    DecodedOps,
    EventBatch,
    EventDecoder,
    EventHash,
)
from .._replicas import (
    GroupSpec,
    ReplicaId,
    ReplicaScheme,
    UnknownReplicaError,
    UnsupportedLayoutError,
    as_replica_id,
)
from ._backend import INDEX_COUNTERS, IndexCounters, IndexStats, RunsAnswer, RunsQuery
from ._ops import MAX_MEDIA, check_ops, medium_name
from ._tables import ReplicaState, SlotPool, Table, evict_oldest
from ._walk import (
    OrderedGroups,
    PrefixWalk,
    Run,
    mark,
    prefix_ands,
    runs_over_media,
    walk,
)

__all__ = [
    "DEFAULT_MEDIUM",
    "GroupSpec",
    "Ingested",
    "PrefixIndex",
    "ReplicaId",
    "ReplicaScheme",
    "UnknownReplicaError",
    "UnsupportedLayoutError",
    "as_replica_id",
]

#: The medium of events from releases that do not publish one (before 0.10.2).
DEFAULT_MEDIUM: Final = "GPU"
_INT_ONLY: Final = frozenset({int})
#: From this many keys a BlockStored of new keys is applied with dict-wide operations.
_BULK: Final = 16
_BYTES_ONLY: Final = frozenset({bytes})


_BIT: Final = attrgetter("bit")
_SCHEME: Final = attrgetter("scheme")
_SLOT: Final = attrgetter("slot")
#: A :data:`BlockOp`'s kind, medium and group; and its hashes.
_RUN_OF: Final = itemgetter(0, 2, 3)
_HASHES: Final = itemgetter(1)
_MEDIUM: Final = itemgetter(2)

#: Per KV-cache group, per medium bit (keyed by its ``bit_length()``): block key -> bitmask
#: of the replica slots holding it.
_Holders = dict[int, dict[int, dict[EventHash, int]]]


class Ingested(NamedTuple):
    """What :meth:`PrefixIndex.ingest` decoded: the payload's warnings (ignored unknown
    fields), its data-parallel rank as published, its number of events, and the decoded
    batch when asked for (``batch=True``)."""

    warnings: tuple[str, ...]
    rank: int | None
    events: int
    batch: EventBatch | None = None


class PrefixIndex:
    """Block keys per replica, KV-cache group and medium, bounded to ``max_entries``."""

    def __init__(self, *, max_entries: int = 10_000_000) -> None:
        self.max_entries = check_int("max_entries", max_entries)
        self._replicas: dict[ReplicaId, ReplicaState] = {}
        self._slots_pool = SlotPool()
        # What queries read of the registrations, rebuilt when they change (replaced,
        # never changed in place, so an answer or a caller can keep them):
        self._slots: tuple[ReplicaId | None, ...] = ()  # per slot, its replica
        self._view: Mapping[ReplicaId, ReplicaScheme] = MappingProxyType({})
        # Every replica in registration order, and their holder bits (one attribute: one read).
        self._everyone: tuple[tuple[ReplicaId, ...], int] = ((), 0)
        self._holders: _Holders = {}
        #: The last holder set :meth:`_drop` took a replica out of, that replica's bit and
        #: the set left: evictions and clears drop a chain's keys one by one, and a run of
        #: equal sets keeps one object (as ``_store`` keeps them).
        self._dropped: tuple[int, int, int] = (0, 0, 0)
        self._size = 0
        self._counters = cast("IndexCounters", dict.fromkeys(INDEX_COUNTERS, 0))
        self._medium_bits: dict[str, int] = {"GPU": 1, "CPU": 2, "STORAGE": 4}
        self._bit_of: dict[str | None, int] = {}  # medium as published -> its bit
        #: Each medium's bit by its ``bit_length()`` (index 0 unused).
        self._bit_at: list[int] = [0, 1, 2, 4]

    # -- replicas ---------------------------------------------------------------

    def register(self, replica: ReplicaId | str, scheme: ReplicaScheme) -> ReplicaId:
        """Register (or re-register) a replica; a changed scheme drops its entries."""
        rid = as_replica_id(replica)
        if not isinstance(scheme, ReplicaScheme):
            raise InvalidRequestError("scheme", f"must be a ReplicaScheme, got {scheme!r}")
        state = self._replicas.get(rid)
        if state is not None and state.scheme.key != scheme.key:
            self._clear(state)
        if state is None:
            self._replicas[rid] = ReplicaState(scheme, self._slots_pool.take())
        elif state.scheme is scheme:
            return rid
        else:
            state.scheme = scheme
        self._registrations_changed()
        return rid

    def remove_replica(self, replica: ReplicaId | str) -> int:
        """Forget a replica that disappeared; return how many entries it held."""
        state = self._replicas.pop(as_replica_id(replica), None)
        if state is None:
            return 0
        dropped = state.count
        self._clear(state)
        self._slots_pool.free(state.slot)
        self._registrations_changed()
        return dropped

    def _registrations_changed(self) -> None:
        states = self._replicas.values()
        slots: list[ReplicaId | None] = [None] * (max(map(_SLOT, states), default=-1) + 1)
        for rid, state in self._replicas.items():
            slots[state.slot] = rid
        self._slots = tuple(slots)
        self._view = MappingProxyType(dict(zip(self._replicas, map(_SCHEME, states),
                                               strict=True)))
        self._everyone = (tuple(self._replicas), reduce(or_, map(_BIT, states), 0))

    def replicas(self) -> Mapping[ReplicaId, ReplicaScheme]:
        """Registered replicas and their schemes (a read-only view, replaced when they change)."""
        return self._view

    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme:
        return self._state(replica).scheme

    # -- events -----------------------------------------------------------------

    def apply(self, replica: ReplicaId | str, batch: EventBatch) -> None:
        """Apply one published batch from ``replica``.

        A name given as a string takes its data-parallel rank from the batch.
        """
        ops = self._checked(_ops_of(batch.events))
        state = self._batch_state(replica, batch.data_parallel_rank, batch.ts, len(batch.events))
        if state is not None:
            self._apply_ops(state, ops)

    def apply_ops(self, replica: ReplicaId | str, decoded: DecodedOps) -> None:
        """:meth:`apply` of a payload as :meth:`~prefixkey.events.EventDecoder.ops` decodes
        it (no event objects): the same entries and counters as applying its batch."""
        ops = self._checked(decoded.ops)
        state = self._batch_state(replica, decoded.data_parallel_rank, decoded.ts, len(ops))
        if state is not None:
            self._apply_ops(state, ops)

    def ingest(self, replica: ReplicaId | str | Callable[[int | None], ReplicaId | None],
               decoder: EventDecoder, payload: bytes, *, batch: bool = False) -> Ingested:
        """Decode one payload of ``replica`` with ``decoder`` and apply it.

        The same as ``apply(replica, decoder.decode(payload).batch)``, with the
        same checks and typed errors (nothing is applied from a payload that
        fails), but without building the event objects unless ``batch=True``
        asks for them (``apply_ops(replica, decoder.ops(payload))``). ``replica``
        may also be a function of the batch's data-parallel rank (None when the
        release does not publish one) returning the replica to apply it to, or
        None to apply nothing (and count nothing); it runs once the payload decoded.
        """
        decoded: EventBatch | None = None
        if batch:
            full = decoder.decode(payload)
            decoded = full.batch
            ops = DecodedOps.of_batch(decoded, full.warnings)
        else:
            ops = decoder.ops(payload)
        rid = replica(ops.data_parallel_rank) if callable(replica) else replica
        if rid is not None:
            self.apply_ops(rid, ops)
        return Ingested(ops.warnings, ops.data_parallel_rank, len(ops.ops), decoded)

    def _checked(self, ops: Iterable[BlockOp]) -> Sequence[BlockOp]:
        """``ops`` checked whole before any is applied: well formed (:func:`check_ops`), and
        naming no medium past the :data:`MAX_MEDIA` the index holds (as in Redis)."""
        ops = check_ops(ops)
        # A batch names at most one new medium per op: only near the bound are they counted.
        if len(self._medium_bits) + len(ops) <= MAX_MEDIA:
            return ops
        bit_of = self._bit_of
        media = set(map(_MEDIUM, ops))
        if len(self._medium_bits) + len(media) > MAX_MEDIA and not bit_of.keys() >= media:
            new = {medium_name(m) for m in media if m is not None} - self._medium_bits.keys()
            if len(self._medium_bits) + len(new) > MAX_MEDIA:
                raise InvalidRequestError(
                    "medium", f"the index already has {len(self._medium_bits):,} medium names "
                    f"(at most {MAX_MEDIA:,}); batch not applied")
        return ops

    def _apply_ops(self, state: ReplicaState, ops: Iterable[BlockOp]) -> None:
        """Apply a batch's events in order; consecutive BlockStored of one medium and group
        are stored in one go (the same keys in the same order: one event after another)."""
        # Runs of equal (kind, medium, group) found in C: Python sees one step per run.
        for (code, medium, group), same in groupby(ops, _RUN_OF):
            if code == STORED:
                self._store(state, list(map(_HASHES, same)), medium, group)
            elif code == REMOVED:
                for op in same:
                    self._remove(state, op[1], medium, group)
            else:
                for _ in same:
                    self._counters["clears"] += 1
                    self._clear(state)

    def _batch_state(self, replica: ReplicaId | str, rank: int | None, ts: float,
                     events: int) -> ReplicaState | None:
        """The replica a batch applies to (None: unknown, counted), its counters updated."""
        # A plain (name, rank) tuple finds its ReplicaId (equal, the same hash), a tenth the cost.
        rid = (replica, rank or 0) if isinstance(replica, str) else as_replica_id(replica)
        c = self._counters
        state = cast("dict[tuple[str, int], ReplicaState]", self._replicas).get(rid)
        if state is None:
            c["unknown_replica_batches"] += 1
            c["unknown_replica_events"] += events
            return None
        c["batches"] += 1
        c["events"] += events
        if state.last_ts is not None and ts < state.last_ts:
            c["out_of_order_batches"] += 1
        else:
            state.last_ts = ts
        return state

    def _bit(self, medium: str | None) -> int:
        bit = self._bit_of.get(medium)
        if bit is not None:
            return bit
        name = DEFAULT_MEDIUM if medium is None else medium_name(medium)
        bit = self._medium_bits.get(name)
        if bit is None:
            bit = self._medium_bits[name] = 1 << len(self._medium_bits)
            self._bit_at.append(bit)
        if len(self._bit_of) < 64:  # medium names as published: a bounded cache
            self._bit_of[medium] = bit
        return bit

    def _keys(self, state: ReplicaState, hashes: tuple[EventHash, ...]) -> Sequence[EventHash]:
        if state.scheme.publishes == "int":
            if _INT_ONLY.issuperset(map(type, hashes)):
                return hashes
            return [block_hash_to_int64(h) if isinstance(h, bytes) else h for h in hashes]
        if _BYTES_ONLY.issuperset(map(type, hashes)):
            return hashes
        keys = [h for h in hashes if isinstance(h, bytes)]
        self._counters["hash_type_mismatches"] += len(hashes) - len(keys)
        return keys

    def _holders_of(self, group: int, bit: int) -> dict[EventHash, int]:
        media = self._holders.get(group)
        if media is None:
            media = self._holders[group] = {}
        at = bit.bit_length()  # not the bit itself: hashing a 65,536-bit int reads all of it
        holders = media.get(at)
        if holders is None:
            holders = media[at] = {}
        return holders

    def _drop(self, group: int, key: EventHash, mask: int, rbit: int) -> None:
        """Take replica ``rbit`` out of ``key``'s holders on every medium of ``mask``."""
        media = self._holders[group]
        while mask:  # the mask's bits, not every medium of the group (there may be 65,536)
            low = mask & -mask
            mask ^= low
            holders = media[low.bit_length()]
            held = holders[key]
            last, last_rbit, rest = self._dropped
            if held != last or rbit != last_rbit:
                rest = held & ~rbit
                self._dropped = (held, rbit, rest)
            if rest:
                holders[key] = rest
            else:
                del holders[key]

    def _store(self, state: ReplicaState, chains: list[tuple[EventHash, ...]], medium: str | None,
               group_idx: int | None) -> None:
        """Store the blocks of one or more BlockStored events (``chains``), in order."""
        bit = self._bit_of.get(medium) or self._bit(medium)
        group = group_idx or 0
        table = state.tables.get(group)
        if table is None:
            table = state.tables[group] = Table()
        holders = self._holders_of(group, bit)
        rbit = state.bit
        # Each chain is recorded tail first, so a chain loses its tail before its head:
        # the chains joined last to first, reversed, in C; then typed once (``_keys`` maps
        # key by key, in order).
        joined = chains[0] if len(chains) == 1 else tuple(chain.from_iterable(chains[::-1]))
        tail_first = self._keys(state, joined[::-1])
        keys = table.keys
        n = len(tail_first)
        # A chain's consecutive keys mostly have one holder set (a prefix the same replicas
        # hold): the new set is made once per run of equal ones (``before`` -> ``after``)
        # and stored as one int object for the whole run. A walk reads each key's set: one
        # object, one cache line, for the run, not one per key (64 replicas x 8k tokens:
        # 9-12% off a top-1 ranking right after hashing; ROUTING.md). Compared by value,
        # so a run that removals split into objects of their own is joined again.
        before: int | None = None
        after = rbit
        if n >= _BULK and self._size + n <= self.max_entries:
            fresh = dict.fromkeys(tail_first, bit)
            if len(fresh) == n and keys.keys().isdisjoint(fresh):
                # A long chain of new keys, no eviction: in bulk (the same order and counts).
                keys.update(fresh)
                self._added(state, n)
                if holders.keys().isdisjoint(fresh):
                    holders.update(dict.fromkeys(tail_first, rbit))
                    return
                get = holders.get
                for key in tail_first:
                    held = get(key)
                    if held is None:
                        holders[key] = rbit
                        continue
                    if held != before:
                        before, after = held, held | rbit
                    holders[key] = after
                return
        added = 0
        room = self.max_entries - self._size  # new entries before one must be evicted
        # setdefault and a length check: one probe of each (large) dict per new key.
        for key in tail_first:
            mask: int | None
            if added < room:
                size = len(keys)
                mask = keys.setdefault(key, bit)
                new = len(keys) != size
            else:
                mask = keys.get(key)
                new = mask is None
                if new:
                    self._added(state, added)
                    added = 0
                    self._evict_one()
                    room = self.max_entries - self._size
                    keys = table.keys  # eviction may compact (replace) it
                    keys[key] = bit
            if new:
                added += 1
            else:
                assert mask is not None
                del keys[key]  # re-inserted last: most recently stored
                table.deleted += 1
                keys[key] = mask | bit
                if mask & bit:
                    self._counters["refreshes"] += 1
                    continue
                self._counters["stores"] += 1
            size = len(holders)
            # The replica's own bit object when alone: no int allocated per entry.
            held = holders.setdefault(key, rbit)
            if len(holders) == size:
                if held != before:
                    before, after = held, held | rbit
                holders[key] = after
        self._added(state, added)

    def _added(self, state: ReplicaState, n: int) -> None:
        """Count ``n`` new entries of ``state``."""
        state.count += n
        self._size += n
        self._counters["stores"] += n

    def _remove(self, state: ReplicaState, hashes: tuple[EventHash, ...], medium: str | None,
                group_idx: int | None) -> None:
        bit = self._bit(medium)
        group = group_idx or 0
        table = state.tables.get(group)
        c = self._counters
        keys = self._keys(state, hashes)
        if table is None:
            c["removes_missing"] += len(keys)
            return
        held, rbit = table.keys, state.bit
        n = len(keys)
        masks = list(map(held.get, keys))
        if n and masks.count(bit) == n and len(set(keys)) == n:
            # Each key held on this medium only, once in the event: the usual removal, in bulk.
            holders = self._holders[group][bit.bit_length()]
            owners = list(map(holders.pop, keys))  # holder sets are unordered: pop, put back
            if owners.count(rbit) != n:  # some are also held by other replicas
                before: int | None = None  # one object per run of equal sets, as _store keeps
                after = 0
                for key, owner in zip(keys, owners, strict=True):
                    if owner != rbit:
                        if owner != before:
                            before, after = owner, owner & ~rbit
                        holders[key] = after
            deque(map(held.__delitem__, keys), 0)
            table.deleted += n
            state.count -= n
            self._size -= n
            c["removes"] += n
            return
        for key in keys:
            mask = held.get(key)
            if mask is None or not mask & bit:
                c["removes_missing"] += 1
                continue
            c["removes"] += 1
            self._drop(group, key, bit, rbit)
            mask &= ~bit
            if mask:
                held[key] = mask
            else:
                del held[key]
                table.deleted += 1
                state.count -= 1
                self._size -= 1

    def _clear(self, state: ReplicaState) -> None:
        rbit = state.bit
        for group, table in state.tables.items():
            for key, mask in table.keys.items():
                self._drop(group, key, mask, rbit)
        self._size -= state.count
        state.count = 0
        state.tables = {}

    def _evict_one(self) -> None:
        state, group, key, mask = evict_oldest(self._replicas.values())
        self._drop(group, key, mask, state.bit)
        self._size -= 1
        self._counters["evictions"] += 1

    # -- queries ----------------------------------------------------------------

    def _state(self, replica: ReplicaId | str) -> ReplicaState:
        rid = as_replica_id(replica)
        state = self._replicas.get(rid)
        if state is None:
            raise UnknownReplicaError(f"replica {rid} is not registered")
        return state

    def longest_runs(
        self, replicas: Sequence[ReplicaId | str], group: int, keys: Sequence[EventHash],
        media: int,
    ) -> list[Run]:
        """Per replica, the leading run of ``keys`` it holds in ``group`` on ``media``.

        ``media`` is a bitmask of :meth:`medium_bits`; a key held only on
        other media ends the run. Each run is run-length encoded: ``(mask,
        count)`` pairs, ``mask`` the media of ``media`` holding the keys.
        The keys are walked once for all the replicas, narrowing the set of
        those still matching and stopping when it is empty.
        """
        # A name (str) is never a key: _state looks it up.
        get = cast("Callable[[object], ReplicaState | None]", self._replicas.get)
        states = [self._state(r) if s is None else s
                  for r, s in zip(replicas, map(get, replicas), strict=True)]
        bits = list(map(_BIT, states))
        alive = reduce(or_, bits, 0)
        maps = self._maps(group, media)
        if len(maps) != 1:
            return list(map(runs_over_media(bits, alive, maps, keys).__getitem__, bits))
        run_of: dict[int, Run] = {}
        for walked, mask in walk(maps[0][1], keys, alive):
            mark(mask, ((maps[0][0], walked),) if walked else (), run_of)
        return list(map(run_of.get, bits, repeat(())))

    def leading_runs(self, queries: Sequence[RunsQuery], media: int) -> list[RunsAnswer]:
        """The candidates' runs for every query and group (the Router's one call).

        A query of one KV-cache group over one medium is walked once and
        answered in order, longest run first, each group's members listed
        only when read; other queries are answered per distinct run.
        Candidates not registered hold nothing.
        """
        out: list[RunsAnswer] = []
        for q in queries:
            alive, extra = self._alive(q.replicas)
            maps = self._maps(0, media) if len(q.groups) == 1 else []
            if len(maps) == 1:
                ends = walk(maps[0][1], q.groups[0], alive) if alive else []
                out.append(RunsAnswer(OrderedGroups(ends, maps[0][0], self._slots, extra),
                                      ordered=True))
                continue
            known = [rid for rid in q.replicas if rid not in extra] if extra else q.replicas
            per_group = [self.longest_runs(known, gi, keys, media)
                         for gi, keys in enumerate(q.groups)]
            answer = RunsAnswer.of_candidates(known, list(zip(*per_group, strict=True)))
            if extra:
                answer = RunsAnswer([*answer.groups, (tuple(() for _ in q.groups), extra)])
            out.append(answer)
        return out

    def _prefix_walk(self, replicas: tuple[ReplicaId, ...],
                     groups: tuple[tuple[EventHash, ...], ...], media: int) -> PrefixWalk | None:
        """The walk :meth:`leading_runs` answers ``RunsQuery(scheme, replicas, groups)``
        with, as its running AND (:class:`PrefixWalk`: a top-1 ranking reads the longest
        runs from its end), or None unless that answer is one walk (one KV-cache group,
        one medium held). No query object: a top-1 ranking's every step is counted."""
        maps = self._maps(0, media) if len(groups) == 1 else []
        if len(maps) != 1:
            return None
        alive, extra = self._alive(replicas)
        (medium, holders), = maps
        # tuple.__new__ in C: a NamedTuple's own __new__ is a Python frame.
        return tuple.__new__(PrefixWalk, (prefix_ands(holders, groups[0], alive) if alive else [],
                                          medium, self._slots, extra))

    def _alive(self, replicas: tuple[ReplicaId, ...]) -> tuple[int, list[ReplicaId]]:
        """The holder-set mask of a query's registered candidates, and the others."""
        everyone, every_bit = self._everyone
        if replicas == everyone:  # the usual query: every replica (compared by identity)
            return every_bit, []
        states = list(map(self._replicas.get, replicas))
        extra: list[ReplicaId] = []
        if None in states:
            extra = [rid for rid, s in zip(replicas, states, strict=True) if s is None]
            states = [s for s in states if s is not None]
        return reduce(or_, map(_BIT, cast("list[ReplicaState]", states)), 0), extra

    def _maps(self, group: int, media: int) -> list[tuple[int, dict[EventHash, int]]]:
        """The holder maps of ``group`` on the media of ``media`` that hold anything."""
        held = self._holders.get(group, _NO_HOLDERS)
        bit_at = self._bit_at
        if media.bit_length() <= 64:
            if len(held) == 1:  # one medium ever held (the usual index): no comprehension
                (at, holders), = held.items()
                return [(bit_at[at], holders)] if holders and media & bit_at[at] else []
            return [(bit_at[at], holders) for at, holders in held.items()
                    if holders and media & bit_at[at]]
        # Many media: one pass over the mask's digits, not a shift of it per medium.
        digits = bin(media)
        return [(bit_at[at], holders) for at, holders in held.items()
                if holders and at < len(digits) - 1 and digits[-at] == "1"]

    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]:
        """A replica group's keys, each mapped to a media bitmask (read-only use)."""
        table = self._state(replica).tables.get(group)
        return _EMPTY if table is None else table.keys

    def medium_bits(self) -> dict[str, int]:
        """The bit of each medium seen so far (``GPU``, ``CPU``, ``STORAGE`` preassigned)."""
        return dict(self._medium_bits)

    def media(self, replica: ReplicaId | str, key: EventHash, group: int = 0) -> frozenset[str]:
        """The media on which ``replica`` holds ``key`` (published form), or an empty set."""
        mask = self.table(replica, group).get(key, 0)
        return frozenset(name for name, bit in self._medium_bits.items() if mask & bit)

    def entries(self, replica: ReplicaId | str) -> Iterator[tuple[int, EventHash, frozenset[str]]]:
        """Every ``(group, key, media)`` of a replica, least recently stored first."""
        state = self._state(replica)
        for group, table in state.tables.items():
            for key, mask in table.keys.items():
                yield group, key, frozenset(n for n, b in self._medium_bits.items() if mask & b)

    def replica_size(self, replica: ReplicaId | str) -> int:
        return self._state(replica).count

    def __len__(self) -> int:
        return self._size

    def stats(self) -> IndexStats:
        """Counters, plus ``size`` (entries held), ``max_entries`` and ``replicas``."""
        return {**self._counters, "size": self._size, "max_entries": self.max_entries,
                "replicas": len(self._replicas)}


def _ops_of(events: Iterable[object]) -> Iterator[BlockOp]:
    """The :data:`BlockOp` of each event (what is not an event is skipped)."""
    for event in events:
        if isinstance(event, BlockStored):
            yield (STORED, event.block_hashes, event.medium, event.group_idx)
        elif isinstance(event, BlockRemoved):
            yield (REMOVED, event.block_hashes, event.medium, event.group_idx)
        elif isinstance(event, AllBlocksCleared):
            yield _CLEARED_OP


_CLEARED_OP: Final[BlockOp] = (CLEARED, (), None, None)
_EMPTY: Final[Mapping[EventHash, int]] = MappingProxyType({})
_NO_HOLDERS: Final[Mapping[int, dict[EventHash, int]]] = MappingProxyType({})
