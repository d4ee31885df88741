"""What the in-memory index keeps per replica: its tables, in store order, for eviction.

:class:`~prefixkey.fleet.PrefixIndex` holds, besides the inverted holder sets
the walk reads, one :class:`Table` per replica and KV-cache group: the keys
the replica stores, least recently stored first, each with the media holding
it. Eviction, :meth:`~prefixkey.fleet.PrefixIndex.entries` and
:meth:`~prefixkey.fleet.PrefixIndex.table` read these.

Eviction
--------
When an event would take the index past ``max_entries``, the index evicts
from the replica holding the most entries (within it, the group holding
most) the entry **stored least recently** (LRU by last store;
re-announcements refresh). The blocks of one ``BlockStored`` are recorded
tail first, so a chain loses its tail before its head, as in vLLM's own free
queue. Picking the largest replica keeps one chatty replica from evicting a
small one.
"""

from __future__ import annotations

import math

from ...events import EventHash
from .._replicas import ReplicaScheme

__all__ = ["ReplicaState", "Table"]


class Table:
    """One replica group's keys, each mapped to a media bitmask, least recently stored first.

    A plain dict kept in store order (a refresh deletes and re-inserts): half
    the memory of an OrderedDict. Deleting leaves holes that ``next(iter())``
    scans past, so eviction (which takes the first key) compacts the dict once
    the deletions since the last compaction pass ``8 * sqrt(len) + 1024``:
    both the scan and the copy stay O(sqrt(len)) per eviction, amortised.
    """

    __slots__ = ("deleted", "keys")

    def __init__(self) -> None:
        self.keys: dict[EventHash, int] = {}
        self.deleted = 0

    def oldest(self) -> EventHash:
        keys = self.keys
        if self.deleted > 8 * math.isqrt(len(keys)) + 1024:
            keys = self.keys = dict(keys)  # a copy of a dict with holes is compact
            self.deleted = 0
        return next(iter(keys))


class ReplicaState:
    """A registered replica: its scheme, its holder bit (slot), its tables per group."""

    __slots__ = ("bit", "count", "last_ts", "scheme", "slot", "tables")

    def __init__(self, scheme: ReplicaScheme, slot: int) -> None:
        self.scheme = scheme
        self.slot = slot
        self.bit = 1 << slot  # one shared int: the holder set of keys only this replica holds
        self.tables: dict[int, Table] = {}
        self.count = 0
        self.last_ts: float | None = None

    def pop_oldest(self) -> tuple[int, EventHash, int]:
        """Take out the entry stored least recently in its largest group: its group,
        key and media bitmask (the holder sets are the index's to update)."""
        group = max(self.tables, key=lambda g: len(self.tables[g].keys))
        table = self.tables[group]
        key = table.oldest()
        mask = table.keys.pop(key)
        table.deleted += 1
        self.count -= 1
        return group, key, mask
