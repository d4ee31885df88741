"""A gateway's count of each replica's queued prefill, less what the replica has done (sans-IO).

The Router's ``queued`` is the prefill work *waiting* on a replica
(``_router``'s module docs). A gateway that adds a request's
``prefill_tokens`` when it sends it and takes them off at its first token
counts the request being prefilled whole until its last token is prefilled,
so a replica that started a long prefill looks as busy at its end as at its
start. On Mooncake's conversation trace (8 replicas of 40,000 blocks) the
holder a next turn was sent away from had, at the median of those
decisions, a third of the tokens counted still to prefill, and those moves
cost the Router 0.9497x the pooled cache's hit rate; counting what is left,
0.986x, with a lower TTFT mean (benchmarks/ROUTING_QUALITY.md).

:class:`PrefillBacklog` counts what is left from what a gateway sees, in the
Router's unit: the requests it sent each replica (their ``prefill_tokens``)
and when their first tokens came back. The oldest request without a first
token is being prefilled since its send, or since the previous first token
on that replica if that came later (vLLM admits its queue in order); the
work done on it is the time since then at the replica's prefill rate, never
more than its own tokens. The rate is measured, not configured: the tokens
of the requests whose prefill was timed that way over their seconds
(a ratio of sums, per replica). Until a replica has one such measure, its
requests count whole, as before. A time that also counts waiting (for a
slot past ``--max-num-seqs``, or for free blocks) makes the rate lower, so
the count errs toward the earlier, whole one.

A gateway that sees no first token for a request (a whole response's end
includes its decode) releases it with :meth:`failed` when it ends: nothing
is timed, so that request counts whole until then. A first token learned
late (a stream's first chunk recorded with its time, reported at the
stream's end) is given with the time it came: the rate is measured right,
though the count held the request until it was reported. :meth:`requests`
is the number of sends not yet released, per replica.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from ...core._checks import check_number
from .._replicas import ReplicaId
from ._candidates import replica_id

__all__ = ["PrefillBacklog"]


class _Replica:
    __slots__ = ("free_at", "seconds", "sends", "timed", "tokens")

    def __init__(self) -> None:
        #: ticket -> (sent at, prefill tokens), in send order.
        self.sends: OrderedDict[int, tuple[float, float]] = OrderedDict()
        self.tokens = 0.0  # the sum of the sends' tokens
        self.free_at = float("-inf")  # the last first token of the oldest send
        self.timed = 0.0  # tokens of the prefills timed
        self.seconds = 0.0  # ... and their seconds


class PrefillBacklog:
    """Each replica's prefill sent and not yet first-tokened, less the work done on the oldest.

    Times are the caller's clock (e.g. :func:`time.monotonic`), in seconds.
    Give :meth:`queued` to the Router as its load
    (``load=lambda r: backlog.queued(r, clock())``, in tokens).
    """

    __slots__ = ("_replicas", "_tickets", "_where")

    def __init__(self) -> None:
        self._replicas: dict[ReplicaId, _Replica] = {}
        self._where: dict[int, ReplicaId] = {}
        self._tickets = 0

    def sent(self, replica: ReplicaId | str, prefill_tokens: float, now: float) -> int:
        """Count a request sent to ``replica`` at ``now`` needing ``prefill_tokens`` (its
        decision's); returns its ticket for :meth:`first_token` or :meth:`failed`."""
        tokens = check_number("prefill_tokens", prefill_tokens)
        at = check_number("now", now, least=-math.inf)
        rid = replica_id(replica)
        r = self._replicas.get(rid)
        if r is None:
            r = self._replicas[rid] = _Replica()
        self._tickets += 1
        r.sends[self._tickets] = (at, tokens)
        r.tokens += tokens
        self._where[self._tickets] = rid
        return self._tickets

    def first_token(self, ticket: int, now: float) -> None:
        """The request of ``ticket`` got its first token at ``now``: its prefill is done (and,
        if it was the oldest, timed: the replica's rate). An unknown ticket: no-op."""
        check_number("now", now, least=-math.inf)
        self._release(ticket, now)

    def failed(self, ticket: int) -> None:
        """The request of ``ticket`` ended without a first token seen (failed, cancelled, or
        answered where the gateway sees no first token): released, nothing timed."""
        self._release(ticket, None)

    def requests(self, replica: ReplicaId | str) -> int:
        """The replica's sends not yet released (first-tokened or failed)."""
        r = self._replicas.get(replica_id(replica))
        return len(r.sends) if r is not None else 0

    def queued(self, replica: ReplicaId | str, now: float) -> float:
        """The replica's prefill tokens still to do at ``now`` (0 for one never sent to)."""
        r = self._replicas.get(replica_id(replica))
        return 0.0 if r is None or not r.sends else self._queued(r, now)

    @staticmethod
    def _queued(r: _Replica, now: float) -> float:
        if r.seconds <= 0.0:
            return r.tokens
        sent_at, tokens = next(iter(r.sends.values()))
        done = (now - max(sent_at, r.free_at)) * r.timed / r.seconds
        return max(r.tokens - min(max(done, 0.0), tokens), 0.0)

    def busy(self, now: float) -> dict[ReplicaId, tuple[int, float]]:
        """The replicas with sends not yet released: their :meth:`requests` and
        :meth:`queued` at ``now`` (one pass over those replicas only)."""
        return {rid: (len(r.sends), self._queued(r, now))
                for rid, r in self._replicas.items() if r.sends}

    def rate(self, replica: ReplicaId | str) -> float | None:
        """The replica's measured prefill rate, tokens per second (None before a measure)."""
        r = self._replicas.get(replica_id(replica))
        return r.timed / r.seconds if r is not None and r.seconds > 0.0 else None

    def _release(self, ticket: int, now: float | None) -> None:
        rid = self._where.pop(ticket, None)
        if rid is None:
            return
        r = self._replicas[rid]
        oldest = next(iter(r.sends)) == ticket
        sent_at, tokens = r.sends.pop(ticket)
        r.tokens = r.tokens - tokens if r.sends else 0.0  # no rounding left over
        if now is None or not oldest:
            return
        elapsed = now - max(sent_at, r.free_at)
        if elapsed > 0.0:
            r.timed += tokens
            r.seconds += elapsed
        r.free_at = max(r.free_at, now)
