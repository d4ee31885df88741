"""The feeds of one subscriber: their shared options, index lock and stats (sans-IO).

:class:`FeedSet` validates a subscriber's options once, builds one
:class:`~prefixkey.fleet.feed._feed.ReplicaFeed` per publisher around them and the
shared :class:`~prefixkey.fleet.feed._fair_lock.FairLock`, and assembles the
subscriber's ``stats()``: each feed's counters, their totals, the queue's
fill and the index's own stats (which must not fail while Redis is down).
Both transports (threaded and asyncio) hold one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, Literal

from ...errors import InvalidRequestError
from ..index._backend import IndexUnavailableError, PrefixIndexBackend
from ..index._memory import UnknownReplicaError
from ..routing._metrics import COUNTERS
from ._endpoints import ReceivedBatch, ReplicaEndpoint
from ._fair_lock import FairLock
from ._feed import Backoff, FeedOptions, ReplicaFeed

__all__ = [
    "DEFAULT_MAX_RANKS",
    "DEFAULT_QUEUE_BYTES",
    "DEFAULT_RETRY_SECONDS",
    "FeedSet",
    "sizes_by_feed",
]

#: Bytes of messages that may wait per replica (their frames' lengths).
DEFAULT_QUEUE_BYTES = 64 * 1024 * 1024
#: Distinct data-parallel ranks one endpoint may announce (vLLM: one per publisher).
DEFAULT_MAX_RANKS = 8
#: How long one batch is retried while the index is unavailable (then counted in apply_errors).
DEFAULT_RETRY_SECONDS = 30.0


def _sleep(delay: float) -> bool:
    time.sleep(delay)
    return True


def sizes_by_feed(feeds: list[ReplicaFeed], index: PrefixIndexBackend | None,
                  lock: FairLock) -> dict[str, int]:
    """Index entries per feed (its replica name and rank); may raise IndexUnavailableError."""
    sizes = dict.fromkeys((f.key for f in feeds), 0)
    if index is None:
        return sizes
    with lock:
        for rid in index.replicas():
            for f in feeds:
                if f.config.name == rid.name and f.config.dp_rank in (None, rid.dp_rank):
                    # A shared index may lose a replica meanwhile (another process, a
                    # Redis restart before the epoch re-registers it): it holds nothing.
                    with contextlib.suppress(UnknownReplicaError):
                        sizes[f.key] += index.replica_size(rid)
                    break
    return sizes


class FeedSet:
    """The feeds of one subscriber and what both transports share: options, lock, stats."""

    def __init__(
        self,
        replicas: list[ReplicaEndpoint],
        *,
        index: PrefixIndexBackend | None,
        on_batch: Callable[[ReceivedBatch], None] | None,
        queue_size: int,
        queue_bytes: int,
        restart_policy: Literal["clear", "keep"],
        catch_up: bool,
        max_jump: int,
        max_ranks: int,
        learn_schemes: bool,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
        backoff: Backoff | None = None,
    ) -> None:
        if not replicas:
            raise InvalidRequestError("replicas", "needs at least one replica")
        keys = [c.key for c in replicas]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise InvalidRequestError("replicas", f"duplicate replica names: {', '.join(dupes)}")
        if restart_policy not in ("clear", "keep"):
            raise InvalidRequestError(
                "restart_policy", f"must be 'clear' or 'keep', got {restart_policy!r}")
        for name, value in (("queue_size", queue_size), ("queue_bytes", queue_bytes),
                            ("max_jump", max_jump), ("max_ranks", max_ranks)):
            if type(value) is not int or value < 1:
                raise InvalidRequestError(name, f"must be an int >= 1, got {value!r}")
        if (not isinstance(retry_seconds, (int, float)) or isinstance(retry_seconds, bool)
                or not 0 <= retry_seconds < float("inf")):
            raise InvalidRequestError(
                "retry_seconds", f"must be a finite number >= 0, got {retry_seconds!r}")
        #: Held while a batch is applied to the index: hold it to read the index.
        self.lock = FairLock()
        self.index = index
        self.options = FeedOptions(index, self.lock, on_batch, restart_policy, catch_up,
                                queue_size, queue_bytes, max_jump, max_ranks, learn_schemes,
                                float(retry_seconds), _sleep if backoff is None else backoff)
        self.feeds = [ReplicaFeed(c, self.options) for c in replicas]
        self.started_at = time.time()

    def stats(self, *, running: bool) -> dict[str, Any]:
        now = time.time()
        index_stats = None
        try:
            sizes = sizes_by_feed(self.feeds, self.index, self.lock)
            if self.index is not None:
                with self.lock:
                    index_stats = self.index.stats()
        except IndexUnavailableError:  # the stats of a subscriber must not fail with Redis
            sizes = dict.fromkeys((f.key for f in self.feeds), 0)
        out = {f.key: f.snapshot(now, self.started_at, sizes[f.key]) for f in self.feeds}
        totals: dict[str, int] = {
            name: sum(int(v[name]) for v in out.values())
            for name in (*COUNTERS, "index_size", "queued", "queued_bytes")
        }
        opts = self.options
        return {
            "replicas": out, "totals": totals, "queue_depth": totals["queued"],
            "queue_capacity": opts.queue_size * len(self.feeds),
            "queue_bytes": totals["queued_bytes"],
            "queue_bytes_capacity": opts.queue_bytes * len(self.feeds),
            "index": index_stats, "running": running,
        }
