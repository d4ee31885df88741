"""The feeds of one subscriber: their options, driver, index lock and stats.

:class:`FeedSet` builds one sans-IO
:class:`~prefixkey.fleet.feed._feed.ReplicaFeed` per publisher around the
subscriber's :class:`~prefixkey.fleet.feed._options.SubscriberOptions`, the
:class:`~prefixkey.fleet.feed._driver.FeedDriver` that carries out their answers
and the shared :class:`~prefixkey.fleet.feed._fair_lock.FairLock`, and assembles
the subscriber's ``stats()``: each feed's counters, their totals, the queue's
fill and the index's own stats (which must not fail while Redis is down).
Both transports (threaded and asyncio) hold one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from ...errors import InvalidRequestError
from ..index._backend import IndexUnavailableError, PrefixIndexBackend
from ..index._memory import UnknownReplicaError
from ..routing._metrics import COUNTERS, SubscriberStats
from ._driver import Backoff, FeedDriver
from ._endpoints import ReceivedBatch, ReplicaEndpoint
from ._fair_lock import FairLock
from ._feed import ReplicaFeed
from ._options import SubscriberOptions

__all__ = ["FeedSet", "sizes_by_feed"]


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
    """The feeds of one subscriber and what both transports share: options, driver, lock, stats.

    ``options`` (default: :class:`SubscriberOptions`'s defaults) with ``changes``,
    option by option, applied over it; ``backoff`` waits between retries
    (default: ``time.sleep``).
    """

    def __init__(
        self,
        replicas: list[ReplicaEndpoint],
        *,
        index: PrefixIndexBackend | None,
        on_batch: Callable[[ReceivedBatch], None] | None = None,
        options: SubscriberOptions | None = None,
        backoff: Backoff | None = None,
        **changes: Any,
    ) -> None:
        if options is not None and not isinstance(options, SubscriberOptions):
            raise InvalidRequestError(
                "options", f"must be a SubscriberOptions, got {type(options).__name__}")
        opts = (options or SubscriberOptions()).with_changes(changes)
        if not replicas:
            raise InvalidRequestError("replicas", "needs at least one replica")
        keys = [c.key for c in replicas]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise InvalidRequestError("replicas", f"duplicate replica names: {', '.join(dupes)}")
        #: Held while a batch is applied to the index: hold it to read the index.
        self.lock = FairLock()
        self.index = index
        self.options = opts
        self.driver = FeedDriver(index, self.lock, on_batch, opts.retry_seconds,
                                 _sleep if backoff is None else backoff)
        self.feeds = [ReplicaFeed(c, opts, on_batch is not None) for c in replicas]
        self.started_at = time.time()

    def stats(self, *, running: bool) -> SubscriberStats:
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
        rows = [cast("Mapping[str, int]", v) for v in out.values()]
        totals: dict[str, int] = {
            name: sum(int(v[name]) for v in rows)
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
