"""The cache pressure: what storing a request's new blocks on a replica evicts (sans-IO).

The Router adds ``pressure x prefill_tokens`` to a candidate's cost (``_router``'s
module docs): each token the request stores there pushes a block out of that
replica's cache, and a block pushed out that would have been reused is prefill
the fleet does again. The pressure, in [0, 1], is the chance that a block pushed
out is one worth keeping, counted from what the Router's first choices (or the
requests reported ``Router.sent``) sent to each replica. Two measures, by what
the caller told the Router:

- **With each replica's KV-cache capacity, and a load** (``cache_tokens``: vLLM's
  ``kv_cache_size_tokens``, ``num_gpu_blocks x block_size`` for a
  full-attention model). The bound the fleet is measured against, one vLLM
  pool of all the replicas' blocks, keeps the blocks its last requests
  touched (reused or stored: each goes back to the free queue's most recently
  used end), up to the fleet's capacity. A replica's *recent* tokens are
  counted the same way: every prompt token sent there, decaying by
  ``exp(-tokens / fleet capacity)`` per prompt sent anywhere. Its pressure is
  ``min(1, recent / capacity)``: the share of its cache that holds blocks
  that pool would still hold, so the chance that a block it evicts is one
  the pooled cache keeps. A replica turning its cache over faster than the
  fleet (its blocks evicted younger than the pool's) costs more to store on;
  one whose cache holds only blocks the pool would have dropped, nothing.
- **Otherwise** (the default): the prefill the replica stored lately (decaying
  by ``1 - 1/replicas`` per decision) relative to the replica that stored the
  most: on the busiest each block stored pushes out one stored lately; a
  replica that stored nothing lately evicts nothing worth keeping. Without a
  load the Router's own count of its sends stands in for the queues, and this
  relative pressure is also what spreads them: with the capacities instead,
  on Mooncake's traces at 32 replicas of 40,000 blocks (caches that do not
  fill in 2,000 requests) one replica took 2.29x and 2.85x the mean requests
  (benchmarks/routing_quality/NOTES.md), so capacities count only with a load.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from ...core._checks import number_refusal
from ...errors import InvalidRequestError
from .._replicas import ReplicaId
from ._queues import Queues

__all__ = ["CachePressure", "PressureFn", "no_pressure"]

#: A ranking's pressure per candidate, in [0, 1].
PressureFn = Callable[[ReplicaId], float]


def no_pressure(rid: ReplicaId) -> float:
    """Every pressure 0 (nothing counted yet)."""
    return 0.0


class CachePressure:
    """Each replica's recent tokens, and its KV-cache capacity in tokens when given."""

    __slots__ = ("_capacity", "_capacity_sum", "_recent", "loaded")

    def __init__(self, capacity: Iterable[tuple[ReplicaId, object]] = ()) -> None:
        #: Per replica: its recent tokens (module docs), decayed.
        self._recent = Queues()
        self._capacity: dict[ReplicaId, float] = {}
        self._capacity_sum = 0.0
        #: The caller gives a load (and reports its sends): the capacities count.
        self.loaded = False
        for rid, tokens in capacity:
            self.set_capacity(rid, tokens)

    def set_capacity(self, replica: ReplicaId, tokens: object) -> None:
        """The replica's KV-cache capacity in tokens (a finite number > 0), or None to forget
        it (a replica gone: it then counts the mean of those given)."""
        if tokens is None:
            self._capacity_sum -= self._capacity.pop(replica, 0.0)
            if not self._capacity:
                self._capacity_sum = 0.0  # no rounding left over
            return
        refusal = number_refusal(tokens, strict=True)
        if refusal is not None:
            raise InvalidRequestError("cache_tokens", f"for {replica}: {refusal}")
        value = float(tokens)  # type: ignore[arg-type]  # number_refusal checked it
        self._capacity_sum += value - self._capacity.get(replica, 0.0)
        self._capacity[replica] = value

    def clear(self) -> None:
        """Forget the counts (the capacities stay): the Router's own count gave way to a
        caller's load."""
        self._recent = Queues()

    @property
    def absolute(self) -> bool:
        """Whether the pressure is the capacities' (module docs)."""
        return self.loaded and bool(self._capacity)

    def _fleet(self, replicas: int) -> float:
        """The fleet's capacity in tokens: a replica not given counts the mean given."""
        return self._capacity_sum / len(self._capacity) * max(replicas, len(self._capacity))

    def store(self, replica: ReplicaId, prefill: float, prompt: float, replicas: int) -> None:
        """Count a request sent to ``replica``: ``prefill`` tokens it stores there, of a
        ``prompt`` of that many tokens; ``replicas`` is the fleet's size."""
        if self.absolute:
            self._recent.decay(math.exp(-max(prompt, 0.0) / self._fleet(replicas)))
            self._recent.add(replica, prompt)
        else:
            self._recent.decay(1 - 1 / max(replicas, 2))
            self._recent.add(replica, prefill)

    def of(self) -> PressureFn:
        """Each candidate's pressure for one ranking (:func:`no_pressure` when none)."""
        top = self._recent.maximum()
        if top <= 0:
            return no_pressure
        # Queues.get is values.get(rid, 0.0) * scale: read without a call (nothing moves
        # the counts while a ranking reads them); one lambda call per candidate listed.
        values, scale = self._recent.stored()
        if not self.absolute:
            return lambda rid: values.get(rid, 0.0) * scale / top  # Queues.get(rid) / top
        capacity, mean = self._capacity.get, self._capacity_sum / len(self._capacity)
        return lambda rid: min(values.get(rid, 0.0) * scale / capacity(rid, mean), 1.0)
