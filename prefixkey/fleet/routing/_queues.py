"""Each replica's queued prefill work, kept in load order (sans-IO).

The Router's cost model reads a replica's queue for every candidate it
ranks, and the least queued replicas first when none holds the prefix. A
ranking read to its head must not cost the fleet, so the queues are kept
sorted as they are pushed (a list kept in order with :mod:`bisect`: an update
moves pointers in C, a ranking reads the head). The Router's own estimate
(no load given) decays every queue by the same factor per decision, which
keeps the order: the values are stored divided by a common scale.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator

from .._replicas import ReplicaId

__all__ = ["Queues"]


class Queues:
    """Queued work per replica (in the caller's unit), in ascending order."""

    __slots__ = ("_scale", "_sorted", "_total", "_values")

    def __init__(self) -> None:
        self._values: dict[ReplicaId, float] = {}  # stored: the value / _scale
        self._sorted: list[tuple[float, ReplicaId]] = []  # (stored, replica), ascending
        self._scale = 1.0
        self._total = 0.0  # the sum of the stored values

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, replica: object) -> bool:
        return replica in self._values

    def get(self, replica: ReplicaId) -> float:
        """The replica's queue (0 for a replica never set)."""
        return self._values.get(replica, 0.0) * self._scale

    def stored(self) -> tuple[dict[ReplicaId, float], float]:
        """The stored values (a live dict) and their scale: :meth:`get` is
        ``stored.get(replica, 0.0) * scale``, read in a loop without a call per replica."""
        return self._values, self._scale

    def ascending_stored(self) -> tuple[dict[ReplicaId, float], float,
                                        list[tuple[float, ReplicaId]]]:
        """:meth:`stored`, and the live ``(stored, replica)`` pairs in ascending order: read
        in one pass with nothing set meanwhile (a ranking's top-1, ``_top1``)."""
        return self._values, self._scale, self._sorted

    def set(self, replica: ReplicaId, value: float) -> None:
        stored = value / self._scale
        old = self._values.get(replica)
        if old is not None:
            if old == stored:
                return
            del self._sorted[bisect_left(self._sorted, (old, replica))]
        insort(self._sorted, (stored, replica))
        self._values[replica] = stored
        self._total += stored - (old or 0.0)

    def add(self, replica: ReplicaId, value: float) -> None:
        self.set(replica, self.get(replica) + value)

    def ensure(self, replicas: Iterable[ReplicaId]) -> None:
        """Track these replicas too (at 0 when new)."""
        values = self._values
        for replica in replicas:
            if replica not in values:
                self.set(replica, 0.0)

    def decay(self, factor: float) -> None:
        """Multiply every queue by ``factor`` (in (0, 1]): the order does not change."""
        self._scale *= factor
        if self._scale < 1e-150:  # renormalise, rarely
            scale = self._scale
            self._values = {r: v * scale for r, v in self._values.items()}
            self._sorted = [(v * scale, r) for v, r in self._sorted]
            self._total *= scale
            self._scale = 1.0

    def minimum(self) -> float:
        """The smallest queue tracked (0 when none is)."""
        return self._sorted[0][0] * self._scale if self._sorted else 0.0

    def maximum(self) -> float:
        """The largest queue tracked (0 when none is)."""
        return self._sorted[-1][0] * self._scale if self._sorted else 0.0

    def total(self) -> float:
        """The sum of the queues (0 when none is tracked)."""
        return max(self._total * self._scale, 0.0)

    def snapshot(self) -> tuple[list[tuple[float, ReplicaId]], float]:
        """The ``(stored, replica)`` pairs in ascending order, and the scale of ``stored``."""
        return list(self._sorted), self._scale

    def ascending(self) -> Iterator[tuple[float, ReplicaId]]:
        """``(queue, replica)`` from the least queued, over a snapshot taken now."""
        snapshot, scale = self.snapshot()
        return ((v * scale, r) for v, r in snapshot)

    @classmethod
    def of(cls, values: Iterable[tuple[ReplicaId, float]]) -> Queues:
        """Queues holding ``values`` (sorted once)."""
        queues = cls()
        queues._values = dict(values)
        queues._sorted = sorted((v, r) for r, v in queues._values.items())
        queues._total = math.fsum(queues._values.values())
        return queues
