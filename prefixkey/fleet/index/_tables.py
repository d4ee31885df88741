"""What an inverted index keeps per replica: its holder bit, its tables in store order, eviction.

:class:`~prefixkey.fleet.PrefixIndex` holds, besides the inverted holder sets
the walk reads, one :class:`Table` per replica and KV-cache group: the keys
the replica stores, least recently stored first, each with a value (the media
holding it). Eviction, :meth:`~prefixkey.fleet.PrefixIndex.entries` and
:meth:`~prefixkey.fleet.PrefixIndex.table` read these.
:class:`~prefixkey.fleet.Predictions` keeps its predicted entries in the same
machinery (the value: when the key was recorded): the same slots, tables and
eviction choice, one copy.

Slots
-----
A replica's *slot* is its bit in every holder set (:class:`SlotPool`); a slot
freed by a removed replica is taken again first, so holder sets stay as short
as the number of replicas registered at once.

Eviction
--------
When an event would take the index past ``max_entries``, the index evicts
from the replica holding the most entries (within it, the group holding
most) the entry **stored least recently** (LRU by last store;
re-announcements refresh): :func:`evict_oldest`. The blocks of one
``BlockStored`` are recorded tail first, so a chain loses its tail before its
head, as in vLLM's own free queue. Picking the largest replica keeps one
chatty replica from evicting a small one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import islice
from operator import attrgetter
from typing import Final, Generic, TypeVar

from ...events import EventHash
from .._replicas import ReplicaScheme

__all__ = ["Entries", "ReplicaState", "SlotPool", "Table", "evict_oldest", "unhold"]

_V = TypeVar("_V")
_COUNT: Final = attrgetter("count")


class Table(Generic[_V]):
    """One replica group's keys, each mapped to a value, least recently stored first.

    A plain dict kept in store order (a refresh deletes and re-inserts): half
    the memory of an OrderedDict. Deleting leaves holes that ``next(iter())``
    scans past, so eviction (which takes the first key) compacts the dict once
    the deletions since the last compaction pass ``8 * sqrt(len) + 1024``:
    both the scan and the copy stay O(sqrt(len)) per eviction, amortised.
    Whoever deletes a key counts it in ``deleted``.
    """

    __slots__ = ("deleted", "keys")

    def __init__(self) -> None:
        self.keys: dict[EventHash, _V] = {}
        self.deleted = 0

    def _compact(self) -> dict[EventHash, _V]:
        keys = self.keys
        if self.deleted > 8 * math.isqrt(len(keys)) + 1024:
            keys = self.keys = dict(keys)  # a copy of a dict with holes is compact
            self.deleted = 0
        return keys

    def oldest(self) -> EventHash:
        """The key stored least recently (the table is not empty)."""
        return next(iter(self._compact()))

    def oldest_value(self) -> _V:
        """The value of the key stored least recently (the table is not empty).

        A look, not an eviction: it compacts only once the holes outnumber the keys
        (a copy per ``len`` deletions), so a table refreshed on every call (a
        conversation's prefix recorded again) is not copied on every look.
        """
        keys = self.keys
        if self.deleted > len(keys):
            keys = self.keys = dict(keys)
            self.deleted = 0
        return next(iter(keys.values()))

    def oldest_keys(self, n: int) -> list[EventHash]:
        """The ``n`` keys stored least recently, oldest first (one scan, in C)."""
        return list(islice(self._compact(), n))


class Entries(Generic[_V]):
    """A replica's entries: its holder bit (slot), its tables per group, how many it holds."""

    __slots__ = ("bit", "count", "slot", "tables")

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.bit = 1 << slot  # one shared int: the holder set of keys only this replica holds
        self.tables: dict[int, Table[_V]] = {}
        self.count = 0

    def pop_oldest(self) -> tuple[int, EventHash, _V]:
        """Take out the entry stored least recently in its largest group: its group,
        key and value (the holder sets are the owner's to update)."""
        tables = self.tables
        group = max(tables, key=lambda g: len(tables[g].keys))
        table = tables[group]
        key = table.oldest()
        value = table.keys.pop(key)
        table.deleted += 1
        self.count -= 1
        return group, key, value


class ReplicaState(Entries[int]):
    """A registered replica of the index: its scheme, entries (key -> media bitmask) and
    the newest batch timestamp applied."""

    __slots__ = ("last_ts", "scheme")

    def __init__(self, scheme: ReplicaScheme, slot: int) -> None:
        super().__init__(slot)
        self.scheme = scheme
        self.last_ts: float | None = None


def evict_oldest(replicas: Iterable[Entries[_V]]) -> tuple[Entries[_V], int, EventHash, _V]:
    """Evict one entry: from the replica holding most, :meth:`Entries.pop_oldest`.

    Returns the replica, and the group, key and value taken out.
    """
    state = max(replicas, key=_COUNT)
    return (state, *state.pop_oldest())


class SlotPool:
    """Holder-set slots: a new replica takes a freed slot first, else the next one."""

    __slots__ = ("_free", "_taken")

    def __init__(self) -> None:
        self._free: list[int] = []
        self._taken = 0

    def take(self) -> int:
        if self._free:
            return self._free.pop()
        self._taken += 1
        return self._taken - 1

    def free(self, slot: int) -> None:
        self._free.append(slot)


def unhold(holders: dict[EventHash, int], key: EventHash, rbit: int) -> None:
    """Take replica bit ``rbit`` out of ``key``'s holder set (deleted when none is left)."""
    rest = holders[key] & ~rbit
    if rest:
        holders[key] = rest
    else:
        del holders[key]
