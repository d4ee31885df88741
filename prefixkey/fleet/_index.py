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

Memory bound and eviction
-------------------------
One *entry* is one ``(replica, group, key)`` whatever the number of media
holding it. When an event would take the index past ``max_entries``, the
index evicts from the replica holding the most entries (within it, the group
holding most) the entry **stored least recently** (LRU by last store;
re-announcements refresh). The blocks of one ``BlockStored`` are recorded
tail first, so a chain loses its tail before its head, as in vLLM's own free
queue. Picking the largest replica keeps one chatty replica from evicting a
small one. Size ``max_entries`` at or above the sum of the replicas' KV-cache
capacities (in blocks, per medium tier counted once) and eviction never
triggers: vLLM's own BlockRemoved events keep the index exact.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

from ..core import ERAS, BlockHash, Hasher, block_hash_to_int64, group_block_hashes
from ..errors import InvalidRequestError, PrefixKeyError
from ..events import AllBlocksCleared, BlockRemoved, BlockStored, EventBatch, EventHash

__all__ = [
    "DEFAULT_MEDIUM",
    "GroupSpec",
    "PrefixIndex",
    "ReplicaId",
    "ReplicaScheme",
    "UnknownReplicaError",
    "UnsupportedLayoutError",
    "as_replica_id",
]

#: The medium of events from releases that do not publish one (before 0.10.2).
DEFAULT_MEDIUM: Final = "GPU"
#: KV-cache group kinds a prefix hit can be computed for (every block must hit).
_SUPPORTED_KINDS: Final = frozenset({"full_attention"})


class UnsupportedLayoutError(PrefixKeyError, ValueError):
    """A KV-cache layout whose prefix hits prefixkey cannot compute exactly."""

    field = "groups"


class UnknownReplicaError(PrefixKeyError, KeyError):
    """A replica that is not registered with the index."""

    field = "replica"


class ReplicaId(NamedTuple):
    """A replica's identity: its name and its data-parallel rank."""

    name: str
    dp_rank: int = 0

    def __str__(self) -> str:
        return self.name if self.dp_rank == 0 else f"{self.name}#dp{self.dp_rank}"


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """One KV-cache group: its block size (a multiple of the hash block size) and kind."""

    block_size: int
    kind: str = "full_attention"


@dataclass(frozen=True)
class ReplicaScheme:
    """How a replica keys and publishes its blocks.

    ``groups`` lists the KV-cache groups (event ``group_idx`` order); empty
    means one full-attention group with the hasher's block size. A group's
    block size must be a multiple of ``hasher.block_size``; only
    full-attention groups are supported (sliding-window and Mamba groups keep
    sparse blocks, so "every block of the prefix is cached" is not their hit
    rule): other layouts raise :class:`UnsupportedLayoutError`.
    """

    hasher: Hasher
    publishes: Literal["int", "bytes"] = "int"
    groups: tuple[GroupSpec, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.hasher, Hasher):
            raise InvalidRequestError("hasher", f"must be a Hasher, got {self.hasher!r}")
        if self.publishes not in ("int", "bytes"):
            raise InvalidRequestError(
                "publishes", f"must be 'int' or 'bytes', got {self.publishes!r}"
            )
        if self.hasher.era.hash_type == "int" and self.publishes == "bytes":
            raise InvalidRequestError(
                "publishes", f"vLLM {self.hasher.vllm_version} keys are ints and publishes ints"
            )
        groups = tuple(self.groups) or (GroupSpec(self.hasher.block_size),)
        era = self.hasher.era
        for i, group in enumerate(groups):
            if not isinstance(group, GroupSpec):
                raise InvalidRequestError(
                    "groups", f"must be GroupSpec, got {group!r}", position=i
                )
            if group.kind not in _SUPPORTED_KINDS:
                raise UnsupportedLayoutError(
                    f"groups[{i}]: kind {group.kind!r} is not supported (only full-attention "
                    "groups: a sliding-window or Mamba group's hit is not a full prefix)"
                )
            bs = group.block_size
            if type(bs) is not int or bs < 1 or bs % self.hasher.block_size:
                raise UnsupportedLayoutError(
                    f"groups[{i}]: block size {bs!r} is not a multiple of the hash block "
                    f"size {self.hasher.block_size}"
                )
            if bs != self.hasher.block_size and era.group_keys == "none":
                first = next(e.since for e in ERAS if e.group_keys != "none")
                raise UnsupportedLayoutError(
                    f"groups[{i}]: vLLM {self.hasher.vllm_version} has no coarser-group keys "
                    f"(hash block size = group block size before {first})"
                )
        object.__setattr__(self, "groups", groups)

    @property
    def hash_key(self) -> tuple[object, ...]:
        """Schemes with equal ``hash_key`` compute the same fine keys for a request."""
        h = self.hasher
        engine = id(h) if h.algorithm.engine_bound else None
        return (h.vllm_version, h.algorithm.name, h.none_hash.value, h.block_size, h.lookahead,
                engine)

    @property
    def key(self) -> tuple[object, ...]:
        """Schemes with equal ``key`` look up the same published keys."""
        return (*self.hash_key, self.publishes, self.groups)

    def publish(self, block_hash: BlockHash) -> EventHash:
        """A key in the form this replica's events carry it."""
        if self.publishes == "int" and isinstance(block_hash, bytes):
            return block_hash_to_int64(block_hash)
        return block_hash

    def group_keys(self, fine: list[BlockHash]) -> tuple[tuple[EventHash, ...], ...]:
        """Per group, the published keys of its blocks, from the request's fine keys."""
        out: list[tuple[EventHash, ...]] = []
        hash_bs = self.hasher.block_size
        # Event ints are the low 64 bits: a concatenation's are its last key's.
        concat = self.publishes == "bytes" and self.hasher.era.group_keys == "concatenated"
        for group in self.groups:
            keys = fine if group.block_size == hash_bs else group_block_hashes(
                fine, hash_bs, group.block_size, concatenate=concat)
            out.append(tuple(map(self.publish, keys)))
        return tuple(out)


_Table = OrderedDict[EventHash, int]  # key -> bitmask of media holding it


class _Replica:
    __slots__ = ("count", "last_ts", "scheme", "tables")

    def __init__(self, scheme: ReplicaScheme) -> None:
        self.scheme = scheme
        self.tables: dict[int, _Table] = {}
        self.count = 0
        self.last_ts: float | None = None


_COUNTERS: Final = (
    "batches", "events", "stores", "refreshes", "removes", "removes_missing", "clears",
    "evictions", "unknown_replica_batches", "unknown_replica_events", "hash_type_mismatches",
    "out_of_order_batches",
)


class PrefixIndex:
    """Block keys per replica, KV-cache group and medium, bounded to ``max_entries``."""

    def __init__(self, *, max_entries: int = 10_000_000) -> None:
        if type(max_entries) is not int or max_entries < 1:
            raise InvalidRequestError("max_entries", f"must be an int >= 1, got {max_entries!r}")
        self.max_entries = max_entries
        self._replicas: dict[ReplicaId, _Replica] = {}
        self._size = 0
        self._counters = dict.fromkeys(_COUNTERS, 0)
        self._medium_bits: dict[str, int] = {"GPU": 1, "CPU": 2, "STORAGE": 4}

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
            self._replicas[rid] = _Replica(scheme)
        else:
            state.scheme = scheme
        return rid

    def remove_replica(self, replica: ReplicaId | str) -> int:
        """Forget a replica that disappeared; return how many entries it held."""
        state = self._replicas.pop(as_replica_id(replica), None)
        if state is None:
            return 0
        dropped = state.count
        self._size -= dropped
        return dropped

    def replicas(self) -> dict[ReplicaId, ReplicaScheme]:
        """Registered replicas and their schemes."""
        return {rid: state.scheme for rid, state in self._replicas.items()}

    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme:
        return self._state(replica).scheme

    # -- events -----------------------------------------------------------------

    def apply(self, replica: ReplicaId | str, batch: EventBatch) -> None:
        """Apply one published batch from ``replica``.

        A name given as a string takes its data-parallel rank from the batch.
        """
        rid = (ReplicaId(replica, batch.data_parallel_rank or 0)
               if isinstance(replica, str) else as_replica_id(replica))
        c = self._counters
        state = self._replicas.get(rid)
        if state is None:
            c["unknown_replica_batches"] += 1
            c["unknown_replica_events"] += len(batch.events)
            return
        c["batches"] += 1
        c["events"] += len(batch.events)
        if state.last_ts is not None and batch.ts < state.last_ts:
            c["out_of_order_batches"] += 1
        else:
            state.last_ts = batch.ts
        for event in batch.events:
            if isinstance(event, BlockStored):
                self._store(state, event)
            elif isinstance(event, BlockRemoved):
                self._remove(state, event)
            elif isinstance(event, AllBlocksCleared):
                c["clears"] += 1
                self._clear(state)

    def _bit(self, medium: str | None) -> int:
        name = DEFAULT_MEDIUM if medium is None else medium.upper()
        bit = self._medium_bits.get(name)
        if bit is None:
            bit = self._medium_bits[name] = 1 << len(self._medium_bits)
        return bit

    def _keys(self, state: _Replica, hashes: tuple[EventHash, ...]) -> list[EventHash]:
        keys: list[EventHash]
        if state.scheme.publishes == "int":
            return [block_hash_to_int64(h) if isinstance(h, bytes) else h for h in hashes]
        keys = [h for h in hashes if isinstance(h, bytes)]
        self._counters["hash_type_mismatches"] += len(hashes) - len(keys)
        return keys

    def _store(self, state: _Replica, event: BlockStored) -> None:
        bit = self._bit(event.medium)
        group = event.group_idx or 0
        table = state.tables.get(group)
        if table is None:
            table = state.tables[group] = OrderedDict()
        c = self._counters
        for key in reversed(self._keys(state, event.block_hashes)):  # tail first
            mask = table.get(key)
            if mask is None:
                if self._size >= self.max_entries:
                    self._evict_one()
                table[key] = bit
                state.count += 1
                self._size += 1
                c["stores"] += 1
            else:
                table.move_to_end(key)
                if mask & bit:
                    c["refreshes"] += 1
                else:
                    table[key] = mask | bit
                    c["stores"] += 1

    def _remove(self, state: _Replica, event: BlockRemoved) -> None:
        bit = self._bit(event.medium)
        table = state.tables.get(event.group_idx or 0)
        c = self._counters
        for key in self._keys(state, event.block_hashes):
            mask = None if table is None else table.get(key)
            if mask is None or not mask & bit:
                c["removes_missing"] += 1
                continue
            assert table is not None
            c["removes"] += 1
            mask &= ~bit
            if mask:
                table[key] = mask
            else:
                del table[key]
                state.count -= 1
                self._size -= 1

    def _clear(self, state: _Replica) -> None:
        self._size -= state.count
        state.count = 0
        state.tables = {}

    def _evict_one(self) -> None:
        state = max(self._replicas.values(), key=lambda s: s.count)
        group = max(state.tables, key=lambda g: len(state.tables[g]))
        table = state.tables[group]
        table.popitem(last=False)  # an emptied table stays, so callers' references hold
        state.count -= 1
        self._size -= 1
        self._counters["evictions"] += 1

    # -- queries ----------------------------------------------------------------

    def _state(self, replica: ReplicaId | str) -> _Replica:
        rid = as_replica_id(replica)
        state = self._replicas.get(rid)
        if state is None:
            raise UnknownReplicaError(f"replica {rid} is not registered")
        return state

    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]:
        """A replica group's keys, each mapped to a media bitmask (read-only use)."""
        return self._state(replica).tables.get(group) or _EMPTY

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
            for key, mask in table.items():
                yield group, key, frozenset(n for n, b in self._medium_bits.items() if mask & b)

    def replica_size(self, replica: ReplicaId | str) -> int:
        return self._state(replica).count

    def __len__(self) -> int:
        return self._size

    def stats(self) -> dict[str, int]:
        """Counters, plus ``size`` (entries held), ``max_entries`` and ``replicas``."""
        return {**self._counters, "size": self._size, "max_entries": self.max_entries,
                "replicas": len(self._replicas)}


_EMPTY: Final[Mapping[EventHash, int]] = OrderedDict()


def as_replica_id(replica: ReplicaId | str) -> ReplicaId:
    """A replica given as a ReplicaId, a name (rank 0) or a (name, rank) pair."""
    if isinstance(replica, ReplicaId):
        return replica
    if isinstance(replica, str):
        return ReplicaId(replica)
    if isinstance(replica, tuple) and len(replica) == 2:
        return ReplicaId(*replica)
    raise InvalidRequestError("replica", f"must be a ReplicaId or a name, got {replica!r}")
